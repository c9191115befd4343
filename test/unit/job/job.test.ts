/** @module test/unit/job/job — AgentJetJob: option → YAML overlay, round trip, capacity, emulator keys (spec §10). */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  AgentJetJob,
  AgentJetJobConfigError,
  buildJobFromYaml,
  DEFAULT_SWARM_YAML,
  JOB_OPTION_YAML_PATHS,
  pythonFloatRepr,
  pyyamlFloat,
} from "../../../src/job/index.ts";
import { serverEpisodeCapacity } from "../../../src/protocol/index.ts";
import type { AgentJetJobOptions } from "../../../src/job/index.ts";
import { readJobYamlFile, writeJobYaml } from "../../../src/node/job-file.ts";
import { describeShared, loadTranscript } from "../../support/shared.ts";

/** Reads a dotted key from parsed YAML. */
function at(tree: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], tree);
}

const OPTIONS = {
  experimentDir: "exp",
  projectName: "proj",
  experimentName: "math_gsm8k_grpo",
  logging: "swanlab",
  nGpu: 4,
  model: "/models/Qwen2.5-3B-Instruct",
  algorithm: "grpo",
  numRepeat: 8,
  batchSize: 16,
  swarmMode: true,
  swarmModeSampleCollectionMethod: "rollout_until_finish_enough_non_dummy_tasks",
  maxEnvWorker: 64,
  backbone: "verl",
  maxPromptLength: 2000,
  maxResponseLength: 6000,
  maxResponseLengthInOneTurn: 2048,
  maxModelLen: 8192,
  miniBatchNum: 2,
  loraRank: 8,
  loraAlpha: 32,
  loraTargetModules: ["q_proj", "v_proj"],
  loraLoadFormat: "safetensors",
  layeredSummon: true,
  gpuMemoryUtilization: 0.7,
  lr: 3e-5,
  ppoEpochs: 2,
  computeMadnessChecklist: ["nonsense"],
  nnodes: 4,
  tensorModelParallelSize: 8,
  maxNumSeqs: 32,
  ppoMaxTokenLenPerGpu: 32768,
  ulyssesSequenceParallelSize: 2,
  useKlLoss: false,
  useKlInReward: true,
  klPenaltyType: "low_var_kl",
  totalTrainingSteps: 200,
  valPrintToMarkdownFilePath: "val.md",
  trainPrintToMarkdownFilePath: "train.md",
  timelineCompareLevel: "token",
  vllmToolParser: "qwen3_coder",
} satisfies AgentJetJobOptions;

describe("AgentJetJob defaults", () => {
  it("takes the spec §10.2 swarm defaults from the shipped YAML", () => {
    const job = new AgentJetJob();
    expect(job.values).toMatchObject({
      experimentDir: "auto",
      projectName: "ajet_default_project",
      experimentName: "read_yaml_name",
      logging: "tensorboard",
      nGpu: 8,
      model: "Qwen/Qwen2.5-7B-Instruct",
      algorithm: "grpo",
      numRepeat: 4,
      batchSize: 32,
      swarmMode: true,
      swarmModeSampleCollectionMethod: "rollout_until_finish_enough_tasks",
      maxEnvWorker: 128,
      backbone: "verl",
      maxPromptLength: 3000,
      maxResponseLength: 15000,
      maxResponseLengthInOneTurn: 4096,
      maxModelLen: 18000,
      miniBatchNum: 1,
      loraRank: 0,
      loraAlpha: 16,
      loraTargetModules: "all-linear",
      loraLoadFormat: "auto",
      layeredSummon: false,
      gpuMemoryUtilization: 0.85,
      lr: 1e-6,
      ppoEpochs: 1,
      computeMadnessChecklist: [],
    });
    expect(job.warnings).toEqual([]);
  });

  it("parses to the keys the emulator reads (spec §10.5)", () => {
    const job = new AgentJetJob({ batchSize: 8, numRepeat: 2, maxEnvWorker: 16, model: "sim/m", projectName: "p" });
    const tree = parse(job.toYaml());
    expect(at(tree, "ajet.data.train_batch_size")).toBe(8);
    expect(at(tree, "ajet.rollout.num_repeat")).toBe(2);
    expect(at(tree, "ajet.rollout.max_env_worker")).toBe(16);
    expect(at(tree, "ajet.swarm_mode_sample_collection_method")).toBe("rollout_until_finish_enough_tasks");
    expect(at(tree, "ajet.swarm_mode_sample_collection_max_cached_episodes")).toBe(9999);
    expect(at(tree, "ajet.model.path")).toBe("sim/m");
    expect(at(tree, "ajet.experiment_name")).toBe("read_yaml_name");
    expect(at(tree, "ajet.project_name")).toBe("p");
    expect(at(tree, "ajet.backbone")).toBe("verl");
    expect(at(tree, "ajet.experiment_dir")).toBe("auto");
  });

  it("maps every option to its spec §10.2 YAML key", () => {
    const tree = parse(new AgentJetJob(OPTIONS).toYaml());
    for (const [name, path] of Object.entries(JOB_OPTION_YAML_PATHS)) {
      expect(at(tree, path), `${name} → ${path}`).toEqual(OPTIONS[name as keyof typeof OPTIONS]);
    }
    expect(JOB_OPTION_YAML_PATHS.numRepeat).toBe("ajet.rollout.num_repeat");
    expect(JOB_OPTION_YAML_PATHS.lr).toBe("ajet.trainer_common.optim.lr");
    expect(JOB_OPTION_YAML_PATHS.computeMadnessChecklist).toBe("ajet.rollout.compute_madness_checklist");
  });

  it("the newest kwargs (spec §10.2b): their YAML keys, nnodes > 1 switches the interchange to tcp, and an absent one stays out of the YAML", () => {
    const tree = parse(new AgentJetJob(OPTIONS).toYaml());
    expect(at(tree, "ajet.interchange_server.interchange_method")).toBe("tcp");
    expect(at(tree, "ajet.context_tracker.timeline_merging_policy.timeline_compare_level")).toBe("token");
    const plain = parse(new AgentJetJob().toYaml());
    expect(at(plain, "ajet.interchange_server.interchange_method")).toBe("ipc");
    expect(at(plain, "ajet.rollout.tensor_model_parallel_size")).toBeUndefined();
    expect(at(plain, "ajet.rollout.vllm_tool_parser")).toBeUndefined();
    expect(new AgentJetJob().values).toMatchObject({ maxNumSeqs: 64, useKlLoss: true, totalTrainingSteps: null });
  });

  it("refuses a bad newest kwarg with a named error", () => {
    expect(() => new AgentJetJob({ klPenaltyType: "l2" as never })).toThrow(/Invalid AgentJetJob option `klPenaltyType` \(ajet.trainer_common.kl_penalty_type\).*Fix: one of "kl"/);
    expect(() => new AgentJetJob({ tensorModelParallelSize: 0 })).toThrow(/`tensorModelParallelSize` \(ajet.rollout.tensor_model_parallel_size\)/);
    expect(() => new AgentJetJob({ timelineCompareLevel: "bytes" as never })).toThrow(/timeline_compare_level/);
  });

  it("keeps the YAML value for undefined and null options (Python None)", () => {
    const job = new AgentJetJob({ numRepeat: undefined, batchSize: null, model: "m" });
    expect([job.numRepeat, job.batchSize, job.model]).toEqual([4, 32, "m"]);
  });
});

describe("AgentJetJob YAML round trip", () => {
  it("options → YAML → buildJobFromYaml gives the same merged values", () => {
    const job = new AgentJetJob(OPTIONS);
    const again = buildJobFromYaml(job.toYaml());
    expect(again.values).toEqual(job.values);
    expect(again.toYaml()).toBe(job.toYaml());
  });

  it("keeps unknown YAML keys, top-level sections and comments, and lets options override the base", () => {
    const base = [
      "ajet:",
      "  rollout:",
      "    num_repeat: 2 # group size",
      "    temperature: 0.7",
      "  my_team_key: {nested: [1, 2]}",
      "actor_rollout_ref:",
      "  actor:",
      "    clip_ratio: 0.2",
      "",
    ].join("\n");
    const job = buildJobFromYaml(base, { batchSize: 4 });
    const tree = parse(job.toYaml());
    expect(at(tree, "ajet.my_team_key")).toEqual({ nested: [1, 2] });
    expect(at(tree, "actor_rollout_ref.actor.clip_ratio")).toBe(0.2);
    expect(at(tree, "ajet.rollout.temperature")).toBe(0.7);
    expect(job.toYaml()).toContain("num_repeat: 2 # group size");
    expect([job.numRepeat, job.batchSize]).toEqual([2, 4]);
    // keys of the option table missing from the base take the shipped default (Python's Config() defaults)
    expect([job.maxEnvWorker, job.model, job.sampleCollectionMethod]).toEqual([
      128,
      "Qwen/Qwen2.5-7B-Instruct",
      "rollout_until_finish_enough_tasks",
    ]);
    expect(buildJobFromYaml(job.toYaml()).get("ajet.my_team_key")).toEqual({ nested: [1, 2] });
  });

  it("writes small floats so PyYAML still reads floats (1.0e-07, not the string 1e-7)", () => {
    const job = new AgentJetJob({ lr: 5e-7 });
    expect(job.toYaml()).toMatch(/^ {6}lr: 5\.0e-07$/m);
    expect(buildJobFromYaml(job.toYaml()).values.lr).toBe(5e-7);
    expect(new AgentJetJob({ gpuMemoryUtilization: 0.5 }).toYaml()).toMatch(/gpu_memory_utilization: 0\.5$/m);
  });

  it("prints floats as Python's repr() does (messages and PyYAML floats)", () => {
    // expected: CPython 3 `repr(float(x))` of each value
    const values = [0, -0, 60, -1, 0.1, 1e-5, 1e16, 1795944946.2630033, 123456, 1.5e-7, 2.5e20, NaN, -Infinity];
    expect(values.map(pythonFloatRepr)).toEqual(
      ["0.0", "-0.0", "60.0", "-1.0", "0.1", "1e-05", "1e+16", "1795944946.2630033", "123456.0", "1.5e-07", "2.5e+20", "nan", "-inf"],
    );
    expect([1e-7, 0.5, 3].map(pyyamlFloat)).toEqual(["1.0e-07", "0.5", "3"]);
  });

  it("quotes strings that YAML 1.1 would read as booleans", () => {
    const job = new AgentJetJob({ experimentName: "yes", logging: "on" });
    expect(job.toYaml()).toContain('experiment_name: "yes"');
    expect(buildJobFromYaml(job.toYaml()).experimentName).toBe("yes");
  });

  it("withYamlValues sets keys without an option and re-validates; the original is unchanged", () => {
    const job = new AgentJetJob();
    const hot = job.withYamlValues({ "ajet.rollout.temperature": 0.5, "ajet.new_section.flag": true });
    expect(hot.get("ajet.rollout.temperature")).toBe(0.5);
    expect(hot.get("ajet.new_section.flag")).toBe(true);
    expect(job.get("ajet.rollout.temperature")).toBe(0.9);
    expect(() => job.withYamlValues({ "ajet.rollout.num_repeat": 0 })).toThrow(/ajet\.rollout\.num_repeat/);
  });

  it("ensureNewExperiment appends a UTC _YYYYMMDD-HHMMSS stamp from the injected clock", () => {
    const nowMs = () => Date.UTC(2026, 0, 31, 12, 34, 56);
    expect(new AgentJetJob({ experimentName: "gsm8k", ensureNewExperiment: true }, { nowMs }).experimentName).toBe(
      "gsm8k_20260131-123456",
    );
    expect(new AgentJetJob({ ensureNewExperiment: true }, { nowMs }).experimentName).toBe(
      "experiment_20260131-123456",
    );
  });

  it("dumps to a file and reads it back (Node helpers)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "ajet-job-"));
    try {
      const job = new AgentJetJob(OPTIONS);
      const path = await writeJobYaml(job, join(dir, "nested", "config.yaml"));
      expect(await readFile(path, "utf8")).toBe(job.dumpJobAsYaml());
      expect((await readJobYamlFile(path, { batchSize: 2 })).values).toEqual({ ...job.values, batchSize: 2 });
      await expect(readJobYamlFile(join(dir, "missing.yaml"))).rejects.toThrow(
        `Configuration yaml is absent! ${join(dir, "missing.yaml")}`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("engine episode capacity (spec §5.2)", () => {
  it.each([
    [32, 128, 4, 128],
    [32, 10, 4, 12],
    [2, 128, 4, 8],
    [8, 16, 2, 16],
    [1, 1, 1, 1],
    [5, 7, 3, 9],
  ])("batchSize %i, maxEnvWorker %i, numRepeat %i → %i", (batchSize, maxEnvWorker, numRepeat, expected) => {
    expect(serverEpisodeCapacity({ batchSize, maxEnvWorker, numRepeat })).toBe(expected);
    expect(new AgentJetJob({ batchSize, maxEnvWorker, numRepeat }).engineEpisodeCapacity).toBe(expected);
  });
});

describe("the shipped default YAML", () => {
  it("is valid YAML with the ajet tree and the upstream layering sections", () => {
    const tree = parse(DEFAULT_SWARM_YAML);
    expect(Object.keys(tree)).toEqual(["ajet", "hydra", "defaults"]);
    expect(tree.defaults).toEqual(["verl_default", "ajet_default", "_self_"]);
    expect(at(tree, "ajet.interchange_server.interchange_server_port")).toBe(10086);
    expect(at(tree, "ajet.task_judge.judge_type")).toBe("customized_protocol");
  });

  it("rejects a base YAML that is not a mapping, naming it", () => {
    expect(() => buildJobFromYaml("- a\n- b\n")).toThrow(AgentJetJobConfigError);
    expect(() => buildJobFromYaml("- a\n- b\n")).toThrow(/baseYaml must be a YAML mapping/);
    expect(() => buildJobFromYaml("ajet: [unclosed\n")).toThrow(/baseYaml is not valid YAML/);
  });
});

describeShared("the YAML the real Python client sent (transcript, spec §10.5)", () => {
  const sent = loadTranscript().find((e) => e.endpoint === "POST /sync_train_config" && e.response.status === 200);
  const yamlText = (sent?.request.body as { yaml_as_string: string } | undefined)?.yaml_as_string ?? "";

  it("builds a job from the full dump with the client's merged values", () => {
    const job = buildJobFromYaml(yamlText);
    expect(job.values).toMatchObject({
      batchSize: 4,
      numRepeat: 4,
      maxEnvWorker: 16,
      model: "sim/fake-policy-model",
      experimentName: "swarm_run_20261129_093522",
      computeMadnessChecklist: ["nonsense"],
      lr: 1e-6,
    });
    expect(job.engineEpisodeCapacity).toBe(16);
  });

  it("re-sends every section of the dump unchanged (VERL keys and hydra interpolations included)", () => {
    const original = parse(yamlText);
    const again = parse(buildJobFromYaml(yamlText).toYaml());
    expect(again).toEqual(original);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: an OmegaConf interpolation, kept literally in the YAML
    expect(at(again, "actor_rollout_ref.rollout.prompt_length")).toBe("${oc.select:data.max_prompt_length,512}");
  });
});
