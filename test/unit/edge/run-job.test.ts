/**
 * The run's AgentJetJob (edge/ground/run-job): its options are validated at POST /runs (issues name `job.<option>`), a
 * `baseYaml` supplies the batch keys the spec does not set (the YAML is the source of truth), and the YAML the
 * server is synced with batches exactly like the run's windows.
 */
import { describe, expect, it } from "vitest";
import { runJob, withJobDefaults } from "../../../src/edge/ground/run-job.ts";
import { AgentJetJob } from "../../../src/job/index.ts";
import { parseRunSpec } from "../../../src/scheduler/index.ts";

const base = { swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "gsm8k" }], function: "math-agent" };

describe("the run's job", () => {
  it("a job option the engine would refuse is an issue at job.<option>", () => {
    const { issues } = withJobDefaults({ ...base, job: { numRepeat: 0 } });
    expect(issues).toEqual([{ code: "invalid", path: "job.numRepeat", message: expect.stringContaining("numRepeat") }]);
    expect(withJobDefaults({ ...base, job: { modle: "x" } }).issues[0]?.path).toMatch(/^job/);
  });

  it("a baseYaml's batch size and num_repeat become the run's when the spec does not set them", () => {
    const yaml = new AgentJetJob({ batchSize: 16, numRepeat: 8, maxEnvWorker: 64 }).toYaml();
    const { body, issues } = withJobDefaults({ ...base, job: { baseYaml: yaml } });
    expect(issues).toEqual([]);
    const parsed = parseRunSpec(body);
    if (!parsed.success) throw new Error(JSON.stringify(parsed.issues));
    expect([parsed.data.batchSize, parsed.data.numRepeat, parsed.data.maxEnvWorker]).toEqual([16, 8, 64]);
  });

  it("a top-level batchSize that disagrees with the baseYaml's is refused (the server would batch differently)", () => {
    const yaml = new AgentJetJob({ batchSize: 16 }).toYaml();
    const { issues } = withJobDefaults({ ...base, batchSize: 8, job: { baseYaml: yaml } });
    expect(issues).toEqual([{ code: "invalid", path: "batchSize", message: "batchSize 8 disagrees with job.baseYaml's ajet.data.train_batch_size 16: the server would batch differently from the run's windows; set one of them" }]);
  });

  it("the synced YAML carries the run's resolved batch settings and the job's other options", () => {
    const parsed = parseRunSpec({ ...base, batchSize: 8, numRepeat: 2, job: { model: "Qwen/Qwen2.5-3B-Instruct" } });
    if (!parsed.success) throw new Error(JSON.stringify(parsed.issues));
    const job = runJob(parsed.data);
    expect([job.batchSize, job.numRepeat, job.maxEnvWorker, job.model]).toEqual([8, 2, 128, "Qwen/Qwen2.5-3B-Instruct"]);
    expect(job.toYaml()).toContain("train_batch_size: 8");
  });
});
