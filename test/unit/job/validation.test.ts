/** @module test/unit/job/validation — AgentJetJob construction rules (spec §10.3) and the max_env_worker warning. */
import { describe, expect, it } from "vitest";
import { AgentJetJob, AgentJetJobConfigError, buildJobFromYaml } from "../../../src/job/index.ts";
import type { AgentJetJobOptions } from "../../../src/job/index.ts";

/** The error a construction throws (fails the test if none). */
function errorOf(options: AgentJetJobOptions): AgentJetJobConfigError {
  try {
    new AgentJetJob(options);
  } catch (err) {
    expect(err).toBeInstanceOf(AgentJetJobConfigError);
    return err as AgentJetJobConfigError;
  }
  throw new Error(`expected ${JSON.stringify(options)} to be refused`);
}

const LORA_OK = { loraRank: 8, loraLoadFormat: "safetensors", layeredSummon: true, lr: 3e-5 } as const;
const LENGTHS = { maxPromptLength: 1000, maxResponseLength: 3000, maxModelLen: 4000, maxResponseLengthInOneTurn: 1024 };

describe("option shapes", () => {
  it("numRepeat < 1 names the option, its YAML key and the fix", () => {
    const err = errorOf({ numRepeat: 0 });
    expect(err.message).toContain("Invalid AgentJetJob option `numRepeat` (ajet.rollout.num_repeat)");
    expect(err.message).toContain("(got 0)");
    expect(err.message).toContain("episodes per task");
    expect([err.code, err.option, err.yamlPath]).toEqual(["invalid_option", "numRepeat", "ajet.rollout.num_repeat"]);
  });

  it("batchSize < 1 names the option and the fix", () => {
    const err = errorOf({ batchSize: 0 });
    expect(err.message).toContain("`batchSize` (ajet.data.train_batch_size)");
    expect(err.message).toContain("tasks per training step: an integer >= 1");
  });

  it("loraRank < 0 names the option and the fix", () => {
    const err = errorOf({ loraRank: -1 });
    expect(err.message).toContain("`loraRank` (ajet.lora.lora_rank)");
    expect(err.message).toContain("0 (LoRA off) or a positive integer");
  });

  it("a non-integer or wrong-typed value is refused with the value shown", () => {
    expect(errorOf({ numRepeat: 2.5 }).message).toContain("(got 2.5)");
    expect(errorOf({ model: 42 as unknown as string }).message).toContain("`model` (ajet.model.path)");
    expect(errorOf({ swarmModeSampleCollectionMethod: "until_bored" as never }).message).toContain(
      "rollout_until_finish_enough_tasks",
    );
  });

  it("an unknown option (a typo) is refused with the known list", () => {
    const err = errorOf({ numRepeats: 4 } as unknown as AgentJetJobOptions);
    expect(err.message).toContain("Unknown AgentJetJob option `numRepeats`");
    expect(err.message).toContain("numRepeat");
    expect(err.option).toBe("numRepeats");
  });

  it("a bad value that comes from the base YAML is named by its YAML key", () => {
    expect(() => buildJobFromYaml("ajet:\n  data:\n    train_batch_size: 0\n")).toThrow(
      "Invalid AgentJetJob YAML key `ajet.data.train_batch_size` (option batchSize)",
    );
  });
});

describe("length options (spec §10.3)", () => {
  it("must be given all together or not at all", () => {
    const err = errorOf({ maxPromptLength: 1000, maxModelLen: 4000 });
    expect(err.message).toMatch(
      /^\(`max_prompt_length`, `max_response_length`, `max_model_len`, `max_response_length_in_one_turn`\) must all be None or all be non-None/,
    );
    expect(err.message).toContain("you set maxPromptLength, maxModelLen only");
    expect(err.code).toBe("length_options");
    expect(new AgentJetJob(LENGTHS).values.maxModelLen).toBe(4000);
  });

  it("prompt + response must fit the model length", () => {
    const err = errorOf({ ...LENGTHS, maxModelLen: 3999 });
    expect(err.message).toMatch(/^illegal token length: maxPromptLength \(1000\) \+ maxResponseLength \(3000\)/);
    expect(err.message).toContain("must be <= maxModelLen (3999)");
    expect([err.code, err.option]).toEqual(["token_length", "maxModelLen"]);
  });

  it("one turn may not exceed the whole response", () => {
    const err = errorOf({ ...LENGTHS, maxResponseLengthInOneTurn: 3001 });
    expect(err.message).toContain("maxResponseLengthInOneTurn (3001) must be <= maxResponseLength (3000)");
  });
});

describe("LoRA rules on merged values (spec §10.3, exact Python messages first)", () => {
  it("needs the safetensors load format", () => {
    const err = errorOf({ ...LORA_OK, loraLoadFormat: "auto" });
    expect(err.message).toMatch(/^When lora_rank > 0, lora_load_format must be 'safetensors', got 'auto'\./);
    expect([err.code, err.option]).toEqual(["lora", "loraLoadFormat"]);
  });

  it("uses the merged load format: the YAML default 'auto' counts", () => {
    const err = errorOf({ loraRank: 8, layeredSummon: true, lr: 3e-5 });
    expect(err.message).toContain("got 'auto'");
  });

  it("needs layered summon", () => {
    expect(errorOf({ ...LORA_OK, layeredSummon: false }).message).toMatch(
      /^When lora_rank > 0, layered_summon must be True\./,
    );
  });

  it("needs an lr above 1e-5 (the default 1e-6 is too small), shown as Python prints it", () => {
    const { lr: _lr, ...noLr } = LORA_OK;
    expect(errorOf(noLr).message).toMatch(/^lr should usually be greater than 1e-5 for lora training, got 1e-06\./);
    expect(errorOf({ ...LORA_OK, lr: 1e-5 }).message).toContain("got 1e-05.");
  });

  it("needs an lr at all when the YAML has none", () => {
    expect(() => buildJobFromYaml("ajet:\n  trainer_common:\n    optim:\n      lr: null\n", LORA_OK)).not.toThrow();
    const yaml = "ajet:\n  trainer_common:\n    optim:\n      lr: null\n";
    const { lr: _lr, ...noLr } = LORA_OK;
    expect(() => buildJobFromYaml(yaml, noLr)).toThrow(/^lr should be provided for lora training\./);
  });

  it("accepts a valid LoRA job", () => {
    expect(new AgentJetJob(LORA_OK).values.loraRank).toBe(8);
  });
});

describe("backbone", () => {
  it("trinity is not implemented", () => {
    const err = errorOf({ backbone: "trinity" });
    expect(err.message).toMatch(/^Trinity backbone is not yet supported in AgentJetJob\. Use backbone "verl"/);
    expect(err.code).toBe("not_implemented");
  });
});

describe("max_env_worker warning (swarm-configuration notes)", () => {
  it("warns when maxEnvWorker is not a multiple of numRepeat, in job.warnings and to the logger", () => {
    const logged: string[] = [];
    const job = new AgentJetJob({ maxEnvWorker: 10, numRepeat: 4 }, { logger: { warn: (m) => logged.push(m) } });
    expect(job.warnings).toHaveLength(1);
    expect(job.warnings[0]).toContain("maxEnvWorker (ajet.rollout.max_env_worker = 10) is not a multiple of numRepeat");
    expect(job.warnings[0]).toContain("ceil(10 / 4) × 4 = 12 episode workers");
    expect(job.warnings[0]).toContain("(e.g. 8 or 12)");
    expect(logged).toEqual(job.warnings);
  });

  it("is silent for a multiple", () => {
    const logged: string[] = [];
    const job = new AgentJetJob({ maxEnvWorker: 12, numRepeat: 4 }, { logger: { warn: (m) => logged.push(m) } });
    expect([job.warnings, logged]).toEqual([[], []]);
  });
});
