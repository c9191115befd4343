import { describe, expect, it } from "vitest";
import { serverEpisodeCapacity } from "../../../src/protocol/index.ts";
import { RunSpec, parseRunSpec } from "../../../src/scheduler/index.ts";
import { specInput } from "./harness.ts";

const issuesOf = (input: unknown) => {
  const r = parseRunSpec(input);
  return r.success ? [] : r.issues;
};

describe("RunSpec defaults", () => {
  it("resolves every default, with maxParallel the server cap min(batchSize, ceil(maxEnvWorker/numRepeat)) × numRepeat", () => {
    const spec = RunSpec.parse({ swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "gsm8k" }], function: "math-agent" });
    expect(spec).toMatchObject({
      swarms: [{ name: "default", url: "http://127.0.0.1:10086" }],
      datasets: [{ name: "gsm8k", weight: 1 }],
      epochs: 1, numRepeat: 4, batchSize: 32, maxEnvWorker: 128, maxParallel: 128, discardEpisodeTimeoutSeconds: 240,
      episodeType: "train", maxSteps: null, maxAttempts: 3, throttleRatio: 1.5, seed: 0, secrets: {}, job: {},
    });
    expect(spec.tuning).toEqual({
      statusPollWaitingMs: 1000, statusPollRollingMs: 3000, dispatchLeaseSeconds: 300, dispatchStartLeaseSeconds: 15, heartbeatSeconds: 10, heartbeatLeaseSeconds: 30,
      runLeaseSeconds: 8 * 240 + 60, reportLeaseSeconds: 720, claimRetryMs: 2000, claimRetryNotRollingMs: 15000, claimRetryMaxMs: 60000, stopGraceSeconds: 30,
    });
  });

  it("gives every swarm the default engine policy: the Worker starts an OFFLINE engine, never stops it, waits 1800 s for a boot", () => {
    const spec = RunSpec.parse({ swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "gsm8k" }], function: "math-agent" });
    expect(spec.swarms[0]!.engine).toEqual({ start: "if-offline", stopWhenDone: false, bootTimeoutSeconds: 1800 });
  });

  it("refuses an engine policy it does not know, naming the field and the choices", () => {
    const bad = parseRunSpec({ swarms: [{ url: "http://127.0.0.1:10086", engine: { start: "always", stopWhendone: true } }], datasets: [{ name: "gsm8k" }], function: "math-agent" });
    expect(bad.success).toBe(false);
    if (bad.success) return;
    expect(bad.issues).toEqual(expect.arrayContaining([
      { path: "swarms.0.engine.start", message: expect.stringContaining('"if-offline"') },
      { path: "swarms.0.engine.stopWhendone", message: 'unknown field "stopWhendone"; did you mean "stopWhenDone"?' },
    ]));
  });

  it("reads batchSize, numRepeat and maxEnvWorker from the job options when not given at the top level", () => {
    const spec = RunSpec.parse(specInput({ batchSize: undefined, numRepeat: undefined, job: { batchSize: 16, numRepeat: 8, maxEnvWorker: 40, model: "Qwen" } }));
    expect([spec.batchSize, spec.numRepeat, spec.maxEnvWorker]).toEqual([16, 8, 40]);
    expect(spec.maxParallel).toBe(serverEpisodeCapacity({ batchSize: 16, maxEnvWorker: 40, numRepeat: 8 }));
    expect(spec.maxParallel).toBe(40); // min(16, ceil(40/8)=5) × 8
    expect(spec.job).toEqual({ batchSize: 16, numRepeat: 8, maxEnvWorker: 40, model: "Qwen" });
  });

  it("keeps the dataset source fields for the readers (passthrough)", () => {
    const spec = RunSpec.parse(specInput({ datasets: [{ name: "gsm8k", weight: 2, path: "data/gsm8k.jsonl", split: "test" }] }));
    expect(spec.datasets[0]).toEqual({ name: "gsm8k", weight: 2, path: "data/gsm8k.jsonl", split: "test" });
  });
});

describe("RunSpec validation names the field and the fix", () => {
  it("rejects a non-positive weight at datasets.N.weight", () => {
    const issues = issuesOf(specInput({ datasets: [{ name: "a" }, { name: "b", weight: 0 }] }));
    expect(issues).toHaveLength(1);
    expect(issues[0]?.path).toBe("datasets.1.weight");
    expect(issues[0]?.message).toMatch(/weight must be > 0/);
  });

  it("rejects numRepeat < 1, a fractional batchSize, and unknown top-level keys", () => {
    const issues = issuesOf({ ...specInput({ numRepeat: 0, batchSize: 2.5 }), batchsize: 8 });
    const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
    expect(byPath.numRepeat).toMatch(/numRepeat is 0; it must be from 1 to 512/);
    expect(byPath.batchSize).toMatch(/whole number/);
    expect(issues.some((i) => i.message.includes("batchsize"))).toBe(true);
  });

  it("rejects a top-level batchSize that disagrees with job.batchSize", () => {
    const issues = issuesOf(specInput({ batchSize: 8, job: { batchSize: 32 } }));
    expect(issues).toEqual([{ path: "batchSize", message: expect.stringMatching(/disagrees with job.batchSize 32/) }]);
  });

  it("rejects duplicate dataset and swarm names, and names that would break episode keys", () => {
    const issues = issuesOf(specInput({
      swarms: [{ url: "http://a:1" }, { url: "http://b:1" }],
      datasets: [{ name: "gsm8k" }, { name: "gsm8k" }, { name: "bad/name" }],
    }));
    expect(issues.map((i) => i.path).sort()).toEqual(["datasets", "datasets.2.name", "swarms"]);
  });

  it("rejects a swarm url that is not http(s)", () => {
    expect(issuesOf(specInput({ swarms: [{ url: "ftp://x" }] }))[0]?.path).toBe("swarms.0.url");
  });

  it("rejects maxSteps on an eval run and a run lease shorter than the consumer lifetime (BC-24)", () => {
    expect(issuesOf(specInput({ episodeType: "eval", maxSteps: 3 }))[0]?.path).toBe("maxSteps");
    const lease = issuesOf(specInput({ discardEpisodeTimeoutSeconds: 60, tuning: { runLeaseSeconds: 400 } }));
    expect(lease[0]?.path).toBe("tuning.runLeaseSeconds");
    expect(lease[0]?.message).toMatch(/tuning.runLeaseSeconds 400 must exceed 8 × discardEpisodeTimeoutSeconds 60 = 480 s/);
  });

  it("rejects a report lease that lets the outbox resend while the consumer's end and its resend (2 × 330 s) may be in flight", () => {
    const issues = issuesOf(specInput({ tuning: { reportLeaseSeconds: 600 } }));
    expect(issues).toEqual([{ path: "tuning.reportLeaseSeconds", message: expect.stringContaining("tuning.reportLeaseSeconds 600 must exceed 2 × the end_episode timeout 330 s = 660 s") }]);
    expect(issuesOf(specInput({ tuning: { reportLeaseSeconds: 660 } })).map((i) => i.path)).toEqual(["tuning.reportLeaseSeconds"]);
    expect(issuesOf(specInput({ tuning: { reportLeaseSeconds: 661 } }))).toEqual([]);
  });

  it("rejects a dispatch lease shorter than the consumer's claim budget plus the claim timeout (20 s + 30 s)", () => {
    const issues = issuesOf(specInput({ tuning: { dispatchLeaseSeconds: 45 } }));
    expect(issues).toEqual([{ path: "tuning.dispatchLeaseSeconds", message: expect.stringContaining("tuning.dispatchLeaseSeconds 45 must exceed the consumer's claim budget 20 s + the claim_episode timeout 30 s = 50 s") }]);
    expect(issuesOf(specInput({ tuning: { dispatchLeaseSeconds: 51 } }))).toEqual([]);
  });

  it("rejects a heartbeat lease that one late heartbeat could expire, naming both values", () => {
    const issues = issuesOf(specInput({ tuning: { heartbeatSeconds: 10, heartbeatLeaseSeconds: 20 } }));
    expect(issues).toEqual([{ path: "tuning.heartbeatLeaseSeconds", message: expect.stringContaining("tuning.heartbeatLeaseSeconds 20 must exceed 2 × tuning.heartbeatSeconds 10 = 20 s") }]);
    expect(issuesOf(specInput({ tuning: { heartbeatSeconds: 20 } })).map((i) => i.path)).toEqual(["tuning.heartbeatLeaseSeconds"]);
    expect(issuesOf(specInput({ tuning: { heartbeatSeconds: 5, heartbeatLeaseSeconds: 11 } }))).toEqual([]);
  });

  it("rejects an un-started dispatch lease longer than the dispatch lease; a shorter dispatch lease alone lowers its default", () => {
    const issues = issuesOf(specInput({ tuning: { dispatchStartLeaseSeconds: 400 } }));
    expect(issues).toEqual([{ path: "tuning.dispatchStartLeaseSeconds", message: expect.stringContaining("tuning.dispatchStartLeaseSeconds 400 must not exceed tuning.dispatchLeaseSeconds 300") }]);
    expect(issuesOf(specInput({ tuning: { dispatchLeaseSeconds: 60 } }))).toEqual([]);
  });

  it("checks the run lease against the lifetime of the run's own discard timeout, defaults included, and names every broken relation at once", () => {
    // the default run lease follows the discard timeout, so it always holds
    expect(issuesOf(specInput({ discardEpisodeTimeoutSeconds: 900 }))).toEqual([]);
    const issues = issuesOf(specInput({ discardEpisodeTimeoutSeconds: 300, tuning: { runLeaseSeconds: 2000, reportLeaseSeconds: 100, dispatchLeaseSeconds: 10 } }));
    expect(issues.map((i) => i.path).sort()).toEqual(["tuning.dispatchLeaseSeconds", "tuning.reportLeaseSeconds", "tuning.runLeaseSeconds"]);
    expect(issues.find((i) => i.path === "tuning.runLeaseSeconds")?.message).toContain("tuning.runLeaseSeconds 2000 must exceed 8 × discardEpisodeTimeoutSeconds 300 = 2400 s");
  });

  it("rejects a sample collection method the run cannot serve, naming why (the non-dummy method with groups of one)", () => {
    const issues = issuesOf(specInput({ numRepeat: 1, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_non_dummy_tasks" } }));
    expect(issues[0]?.path).toBe("job.swarmModeSampleCollectionMethod");
    expect(issues[0]?.message).toMatch(/needs numRepeat ≥ 2 \(got 1\)/);
  });
});

describe("BC-31 throttle ratio arithmetic in config validation", () => {
  it("BC-31 rejects two sources at ratio 0.4 each: caps 13 + 13 = 26 < batch 32", () => {
    const issues = issuesOf(specInput({ batchSize: 32, datasets: [{ name: "a", throttleRatio: 0.4 }, { name: "b", throttleRatio: 0.4 }] }));
    expect(issues.find((i) => i.path === "datasets")?.message).toMatch(/sum to 26, below batchSize 32/);
  });

  it("BC-31 accepts two sources at ratio 0.5 each: caps 16 + 16 = 32 fill batch 32", () => {
    expect(issuesOf(specInput({ batchSize: 32, datasets: [{ name: "a", throttleRatio: 0.5 }, { name: "b", throttleRatio: 0.5 }] }))).toEqual([]);
  });

  it("BC-31 rejects a weight share above its source's cap (share 24 > cap 16)", () => {
    const issues = issuesOf(specInput({
      batchSize: 32,
      datasets: [{ name: "a", weight: 0.25, throttleRatio: 0.5 }, { name: "b", weight: 0.75, throttleRatio: 0.5 }],
    }));
    expect(issues).toEqual([{ path: "datasets.1.throttleRatio", message: expect.stringMatching(/share 24.00 .* caps it at 16/) }]);
  });

  it("BC-31 rejects a run ratio whose cap is below one window: ceil(32 × 0.9) = 29 < 32", () => {
    const issues = issuesOf(specInput({ batchSize: 32, throttleRatio: 0.9 }));
    expect(issues[0]?.path).toBe("throttleRatio");
    expect(issues[0]?.message).toMatch(/caps this run at 29 unique tasks/);
  });
});

describe("tuning bounds", () => {
  it("refuses a status poll faster than 100 ms and names the field", () => {
    const r = parseRunSpec(specInput({ tuning: { statusPollWaitingMs: 1 } }));
    expect(r.success).toBe(false);
    if (!r.success) expect(r.issues).toEqual([expect.objectContaining({ path: "tuning.statusPollWaitingMs", message: expect.stringContaining("from 100 to 60,000 milliseconds") })]);
  });
});

describe("issues that say the fix", () => {
  it("names missing required fields with an example", () => {
    expect(issuesOf({})).toEqual(
      expect.arrayContaining([
        { path: "swarms", message: 'swarms is required, e.g. [{"url": "http://127.0.0.1:10086"}]' },
        { path: "function", message: 'function is required, e.g. "math-agent"' },
        expect.objectContaining({ path: "datasets", message: expect.stringContaining("datasets is required") }),
      ]),
    );
  });
  it("suggests the field a misspelt key meant", () => {
    expect(issuesOf(specInput({ batchsize: 8 } as never))).toEqual([{ path: "batchsize", message: 'unknown field "batchsize"; did you mean "batchSize"?' }]);
    expect(issuesOf(specInput({ tuning: { statusPollWaiting: 500 } } as never))).toEqual([
      { path: "tuning.statusPollWaiting", message: 'unknown field "statusPollWaiting"; did you mean "statusPollWaitingMs"?' },
    ]);
    expect(issuesOf(specInput({ zzz: 1 } as never))).toEqual([{ path: "zzz", message: 'unknown field "zzz"' }]);
  });
});

describe("the sandbox block", () => {
  it("absent: no sandboxes; {}: enabled with the defaults", () => {
    expect(RunSpec.parse(specInput({})).sandbox).toBeUndefined();
    expect(RunSpec.parse(specInput({ sandbox: {} })).sandbox).toMatchObject({ enabled: true, instanceType: "lite", createsPerSecond: 10 });
  });
  it("names the field and the fix for an unknown instance type, a misspelt key, and the judge's key let in", () => {
    expect(issuesOf(specInput({ sandbox: { instanceType: "huge" } } as never))).toEqual([
      { path: "sandbox.instanceType", message: "sandbox.instanceType must be one of lite, basic, standard-1, standard-2, standard-3, standard-4" },
    ]);
    expect(issuesOf(specInput({ sandbox: { maxlive: 3 } } as never))).toEqual([{ path: "sandbox.maxlive", message: 'unknown field "maxlive"; did you mean "maxLive"?' }]);
    expect(issuesOf(specInput({ sandbox: { secrets: ["JUDGE_API_KEY"] } }))).toEqual([
      { path: "sandbox.secrets", message: "JUDGE_API_KEY never enters a sandbox (the judge is called by the function, outside it); remove it from sandbox.secrets" },
    ]);
  });
});
