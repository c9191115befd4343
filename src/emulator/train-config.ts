/**
 * @module emulator/train-config — what the emulator reads from the synced AgentJetJob YAML (spec §10.5), with the
 * swarm defaults for missing keys (spec §10.2), and the engine's last training step.
 */
import { parse as parseYaml } from "yaml";
import { SampleCollectionMethod, SWARM_BATCH_DEFAULTS } from "../protocol/index.ts";
import { pyTypeName } from "./python/codecs.ts";

/** The training settings the simulated engine needs. */
export interface TrainConfig {
  /** `ajet.data.train_batch_size` (B): tasks per training step. Default 32. */
  batchSize: number;
  /** `ajet.rollout.num_repeat` (R): episodes per task. Default 4. */
  numRepeat: number;
  /** `ajet.rollout.max_env_worker`. Default 128 (swarm yaml). */
  maxEnvWorker: number;
  /** `ajet.swarm_mode_sample_collection_method`; an unknown value falls back to the default (spec §7.3). */
  sampleCollectionMethod: SampleCollectionMethod;
  /** The raw configured method string, as the engine reports it in pool pushes. */
  sampleCollectionMethodRaw: string;
  /** `ajet.swarm_mode_sample_collection_max_cached_episodes`. Default 9999. */
  maxCachedEpisodes: number;
  /** `ajet.model.path`, or null when absent (the server stores null, spec §3.2). */
  modelPath: string | null;
  /** `ajet.experiment_name`. Default "read_yaml_name". */
  experimentName: string;
  /** `ajet.experiment_dir`. Default "auto". */
  experimentDir: string;
  /** `ajet.trainer_common.total_training_steps` or null. */
  totalTrainingSteps: number | null;
  /** `ajet.trainer_common.total_epochs`. Default 50. */
  totalEpochs: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const at = (root: unknown, path: string[]): unknown =>
  path.reduce<unknown>((node, key) => (isObj(node) ? node[key] : undefined), root);
const posInt = (v: unknown, dflt: number) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : dflt);

/**
 * Parses the YAML the way the engine reads it.
 * @throws Error when the text is not YAML or its top level is not a mapping (the real `/start_engine` then answers
 * `{"success": false, "error": <message>}` and leaves the status BOOTING, spec §11.9).
 */
export function parseTrainConfig(yamlText: string): TrainConfig {
  const root: unknown = parseYaml(yamlText);
  if (!isObj(root)) throw new Error(`'${pyTypeName(root)}' object has no attribute 'get'`);
  const ajet = at(root, ["ajet"]);
  const method = at(ajet, ["swarm_mode_sample_collection_method"]);
  const methodRaw = typeof method === "string" ? method : "rollout_until_finish_enough_tasks";
  const known = SampleCollectionMethod.safeParse(methodRaw);
  const steps = at(ajet, ["trainer_common", "total_training_steps"]);
  const modelPath = at(ajet, ["model", "path"]);
  const experimentName = at(ajet, ["experiment_name"]);
  const experimentDir = at(ajet, ["experiment_dir"]);
  return {
    batchSize: posInt(at(ajet, ["data", "train_batch_size"]), SWARM_BATCH_DEFAULTS.batchSize),
    numRepeat: posInt(at(ajet, ["rollout", "num_repeat"]), SWARM_BATCH_DEFAULTS.numRepeat),
    maxEnvWorker: posInt(at(ajet, ["rollout", "max_env_worker"]), SWARM_BATCH_DEFAULTS.maxEnvWorker),
    sampleCollectionMethod: known.success ? known.data : "rollout_until_finish_enough_tasks",
    sampleCollectionMethodRaw: methodRaw,
    maxCachedEpisodes: posInt(at(ajet, ["swarm_mode_sample_collection_max_cached_episodes"]), 9999),
    modelPath: typeof modelPath === "string" ? modelPath : null,
    experimentName: typeof experimentName === "string" ? experimentName : "read_yaml_name",
    experimentDir: typeof experimentDir === "string" ? experimentDir : "auto",
    totalTrainingSteps: typeof steps === "number" && steps > 0 ? Math.floor(steps) : null,
    totalEpochs: posInt(at(ajet, ["trainer_common", "total_epochs"]), 50),
  };
}

/**
 * `ajet.model.path` as `/sync_train_config` stores it: null when the YAML does not parse or lacks the key
 * (spec §3.2; parse failures are not errors there).
 */
export function modelPathOf(yamlText: string): string | null {
  try {
    return parseTrainConfig(yamlText).modelPath;
  } catch {
    return null;
  }
}

/**
 * The engine's last step: `total_training_steps` when set, else `total_epochs × ceil(1000 / B)` (the engine's
 * placeholder dataset is `random_dummy` with 1000 tasks, spec §4.2 item 8). Approximate: the real dataloader may
 * drop the last partial batch.
 */
export function lastTrainingStep(config: TrainConfig): number {
  return config.totalTrainingSteps ?? config.totalEpochs * Math.ceil(1000 / config.batchSize);
}
