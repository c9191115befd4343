/**
 * @module job/options — the AgentJetJob option table: each camelCase option, the YAML key it overwrites, the shape
 * of its value and how to fix a bad one (spec §10.2, newest job.py kwargs).
 */
import { z } from "zod";
import { SampleCollectionMethod } from "../protocol/index.ts";

/** One row of the option table: the YAML key (dotted, snake_case), the value schema and a fix hint. */
interface JobField<S extends z.core.$ZodType> {
  readonly yamlPath: string;
  readonly schema: S;
  readonly fix: string;
}

function field<S extends z.core.$ZodType>(yamlPath: string, schema: S, fix: string): JobField<S> {
  return { yamlPath, schema, fix };
}

const positiveInt = z.int().min(1);
const nonEmpty = z.string().min(1);
const tokens = (what: string) => `${what}, in tokens: an integer >= 1 (set all four length options together)`;

/**
 * Option → YAML key → value schema, in the order of spec §10.2, then the newest kwargs of §10.2b (and the tool parser,
 * set by hand upstream: llm-routes §9.1). `schema` checks the MERGED value (option or YAML);
 * an option may also be `undefined`/`null`, which keeps the YAML value (as Python's `None`).
 */
export const JOB_FIELDS = {
  experimentDir: field("ajet.experiment_dir", nonEmpty, 'a directory name, or "auto" (saved_experiments/<name>)'),
  projectName: field("ajet.project_name", nonEmpty, "a non-empty project name"),
  experimentName: field("ajet.experiment_name", nonEmpty, "a non-empty experiment name"),
  logging: field("ajet.trainer_common.logger", z.union([nonEmpty, z.array(nonEmpty)]), '"tensorboard", "swanlab", …'),
  nGpu: field("ajet.trainer_common.n_gpus_per_node", positiveInt, "GPUs per node: an integer >= 1"),
  model: field("ajet.model.path", nonEmpty, "the path or hub id of the model to train"),
  algorithm: field("ajet.trainer_common.algorithm.adv_estimator", nonEmpty, 'an advantage estimator, e.g. "grpo"'),
  numRepeat: field(
    "ajet.rollout.num_repeat",
    positiveInt,
    "numRepeat is the number of episodes per task (the GRPO group size): an integer >= 1, e.g. 4",
  ),
  batchSize: field(
    "ajet.data.train_batch_size",
    positiveInt,
    "batchSize is the number of tasks per training step: an integer >= 1, e.g. 32",
  ),
  swarmMode: field("ajet.enable_swarm_mode", z.boolean(), "true for swarm training"),
  swarmModeSampleCollectionMethod: field(
    "ajet.swarm_mode_sample_collection_method",
    SampleCollectionMethod,
    `one of ${SampleCollectionMethod.options.join(", ")}`,
  ),
  maxEnvWorker: field(
    "ajet.rollout.max_env_worker",
    positiveInt,
    "maxEnvWorker caps the engine's in-flight episodes: an integer >= 1, a multiple of numRepeat",
  ),
  backbone: field("ajet.backbone", nonEmpty, 'use backbone "verl"'),
  maxPromptLength: field("ajet.data.max_prompt_length", positiveInt, tokens("maxPromptLength")),
  maxResponseLength: field("ajet.data.max_response_length", positiveInt, tokens("maxResponseLength")),
  maxResponseLengthInOneTurn: field(
    "ajet.rollout.max_response_length_in_one_turn",
    positiveInt,
    tokens("maxResponseLengthInOneTurn"),
  ),
  maxModelLen: field("ajet.rollout.max_model_len", positiveInt, tokens("maxModelLen")),
  miniBatchNum: field("ajet.trainer_common.mini_batch_num", positiveInt, "optimizer steps per batch: an integer >= 1"),
  loraRank: field("ajet.lora.lora_rank", z.int().min(0), "loraRank is 0 (LoRA off) or a positive integer, e.g. 8"),
  loraAlpha: field("ajet.lora.lora_alpha", z.number().positive(), "a positive LoRA scaling factor, e.g. 16"),
  loraTargetModules: field(
    "ajet.lora.target_modules",
    z.union([nonEmpty, z.array(nonEmpty).min(1)]),
    '"all-linear" or a list of module names',
  ),
  loraLoadFormat: field("ajet.lora.load_format", nonEmpty, '"auto", or "safetensors" for LoRA'),
  layeredSummon: field("ajet.lora.layered_summon", z.boolean(), "true or false (true for LoRA)"),
  gpuMemoryUtilization: field(
    "ajet.rollout.gpu_memory_utilization",
    z.number().gt(0).lte(1),
    "the vLLM memory fraction, in (0, 1], e.g. 0.85",
  ),
  lr: field("ajet.trainer_common.optim.lr", z.number().positive().nullable(), "a positive learning rate, e.g. 1e-6"),
  ppoEpochs: field("ajet.trainer_common.ppo_epochs", positiveInt, "PPO epochs per batch: an integer >= 1"),
  computeMadnessChecklist: field(
    "ajet.rollout.compute_madness_checklist",
    z.array(z.string()),
    'a list of check names, e.g. ["nonsense"], or []',
  ),
  // newest job.py kwargs (spec §10.2b); absent from the YAML (null/undefined): the engine's own default
  nnodes: field("ajet.trainer_common.nnodes", positiveInt.nullish(), "training nodes: an integer >= 1 (> 1 also sets ajet.interchange_server.interchange_method to tcp)"),
  tensorModelParallelSize: field("ajet.rollout.tensor_model_parallel_size", positiveInt.nullish(), "the vLLM tensor-parallel size: an integer >= 1 that divides the GPUs per node, e.g. 8"),
  maxNumSeqs: field("ajet.rollout.max_num_seqs", positiveInt, "sequences each vLLM engine processes in parallel: an integer >= 1, e.g. 64"),
  ppoMaxTokenLenPerGpu: field("ajet.rollout.ppo_max_token_len_per_gpu", positiveInt.nullish(), "the PPO update's token budget per GPU: an integer >= 1, e.g. 32768"),
  ulyssesSequenceParallelSize: field("ajet.trainer_common.ulysses_sequence_parallel_size", positiveInt.nullish(), "the sequence-parallel size: an integer >= 1, e.g. 2"),
  useKlLoss: field("ajet.trainer_common.use_kl_loss", z.boolean(), "true (a KL term in the actor loss, the default) or false"),
  useKlInReward: field("ajet.trainer_common.use_kl_in_reward", z.boolean().nullish(), "true (a KL penalty subtracted from the reward) or false (the default)"),
  klPenaltyType: field("ajet.trainer_common.kl_penalty_type", z.enum(["kl", "abs", "mse", "low_var_kl", "full"]).nullish(), 'one of "kl" (the default), "abs", "mse", "low_var_kl", "full"'),
  totalTrainingSteps: field("ajet.trainer_common.total_training_steps", positiveInt.nullable(), "a hard cap on training steps: an integer >= 1, or null to run total_epochs"),
  valPrintToMarkdownFilePath: field("ajet.trainer_common.val_print_to_markdown_file_path", nonEmpty.nullish(), "a file path on the server the validation metrics are appended to"),
  trainPrintToMarkdownFilePath: field("ajet.trainer_common.train_print_to_markdown_file_path", nonEmpty.nullish(), "a file path on the server the training metrics are appended to"),
  timelineCompareLevel: field("ajet.context_tracker.timeline_merging_policy.timeline_compare_level", z.enum(["text", "token"]).nullish(), '"text" (the default) or "token"'),
  vllmToolParser: field("ajet.rollout.vllm_tool_parser", nonEmpty.nullish(), 'the vLLM tool-call parser of the model, e.g. "qwen3_coder" or "hermes"'),
} as const;

/** The options that overwrite one YAML key each. */
export type JobFieldName = keyof typeof JOB_FIELDS;

/** The merged (option over YAML) value of every option, as the getters of AgentJetJob return them. */
export type AgentJetJobValues = { [K in JobFieldName]: z.output<(typeof JOB_FIELDS)[K]["schema"]> };

/** Option name → dotted YAML key (spec §10.2), e.g. `numRepeat` → `ajet.rollout.num_repeat`. */
export const JOB_OPTION_YAML_PATHS = Object.fromEntries(
  Object.entries(JOB_FIELDS).map(([name, f]) => [name, f.yamlPath]),
) as { readonly [K in JobFieldName]: string };

/** The names of the option table, in spec order. */
export const JOB_FIELD_NAMES = Object.keys(JOB_FIELDS) as JobFieldName[];

type NullishShape = {
  [K in JobFieldName]: z.ZodOptional<z.ZodNullable<(typeof JOB_FIELDS)[K]["schema"]>>;
};
const nullishShape = Object.fromEntries(
  JOB_FIELD_NAMES.map((name) => [name, z.optional(z.nullable(JOB_FIELDS[name].schema))]),
) as NullishShape;

/**
 * The constructor options of AgentJetJob (zod; unknown keys are refused so a typo fails loudly). Every table
 * option is optional: `undefined` or `null` keeps the YAML value. Plus two init-only options:
 * - `ensureNewExperiment`: append `_YYYYMMDD-HHMMSS` (UTC) to the experiment name (spec §10.2).
 * - `baseYaml`: YAML TEXT to overlay instead of {@link DEFAULT_SWARM_YAML} (Node callers read files with
 *   `src/node/job-file.ts`).
 */
export const AgentJetJobOptions = z.strictObject({
  ...nullishShape,
  ensureNewExperiment: z.boolean().optional(),
  baseYaml: z.string().optional(),
});
/** Constructor options as written by a caller. */
export type AgentJetJobOptions = z.input<typeof AgentJetJobOptions>;
