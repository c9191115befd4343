/**
 * @module job/job — `AgentJetJob`: a thin overlay on a YAML (spec §10), the configuration `sync_train_config`
 * sends. Options overwrite single keys; every other key, known or not, is kept as written.
 */
import type { Document } from "yaml";
import { serverEpisodeCapacity, type SampleCollectionMethod } from "../protocol/index.ts";
import { DEFAULT_SWARM_YAML } from "./default-config.ts";
import { JOB_FIELD_NAMES, JOB_FIELDS } from "./options.ts";
import type { AgentJetJobOptions, AgentJetJobValues } from "./options.ts";
import { assertLengthOptionsTogether, jobWarnings, parseJobOptions, readJobValues } from "./validate.ts";
import { getPath, parseJobYaml, setYamlPath, stringifyJobYaml } from "./yaml-text.ts";

/** Where job warnings go besides `job.warnings` (e.g. the CLI's logger or `console`). */
export interface JobLogger {
  warn(message: string): void;
}

/** Injected dependencies: a logger for warnings and a clock (epoch milliseconds) for `ensureNewExperiment`. */
export interface AgentJetJobDeps {
  logger?: JobLogger;
  nowMs?: () => number;
}

/** The experiment-name placeholder of the default YAML (spec §10.2). */
export const READ_YAML_NAME = "read_yaml_name";

/** `_YYYYMMDD-HHMMSS` in UTC (workerd's clock has no time zone). */
function experimentStamp(nowMs: number): string {
  const iso = new Date(nowMs).toISOString(); // 2026-01-31T12:34:56.789Z
  return `_${iso.slice(0, 10).replaceAll("-", "")}-${iso.slice(11, 19).replaceAll(":", "")}`;
}

/**
 * A swarm training job: base YAML + sparse option overrides, validated at construction (spec §10.1–10.3).
 *
 * @example
 *   const job = new AgentJetJob({ model: "Qwen/Qwen2.5-3B-Instruct", batchSize: 32, numRepeat: 4 });
 *   await client.syncTrainConfig(job); // sends {"yaml_as_string": job.toYaml()}
 *
 * @throws AgentJetJobConfigError on an unknown option, a bad value (named by option or YAML key), the length
 *   options not given together, token-length sums, LoRA rules, or `backbone: "trinity"`.
 */
export class AgentJetJob {
  /** Non-fatal advice found at construction (also sent to `deps.logger.warn`). */
  readonly warnings: readonly string[];
  /** The merged value of every option (option over YAML). */
  readonly values: Readonly<AgentJetJobValues>;
  readonly #doc: Document;
  readonly #tree: Record<string, unknown>;

  constructor(options: AgentJetJobOptions = {}, deps: AgentJetJobDeps = {}) {
    const parsed = parseJobOptions(options);
    assertLengthOptionsTogether(parsed);
    const hasBase = parsed.baseYaml !== undefined;
    const doc = parseJobYaml(parsed.baseYaml ?? DEFAULT_SWARM_YAML, hasBase ? "baseYaml" : "default YAML");
    const defaults = hasBase ? (parseJobYaml(DEFAULT_SWARM_YAML, "default YAML").toJS() as unknown) : null;
    const given = new Set<string>();
    for (const name of JOB_FIELD_NAMES) {
      const { yamlPath } = JOB_FIELDS[name];
      const value = parsed[name];
      if (value != null) {
        given.add(name);
        setYamlPath(doc, yamlPath, value);
      } else if (defaults && doc.getIn(yamlPath.split(".")) === undefined && getPath(defaults, yamlPath) !== undefined) {
        // A base YAML without this key: take our default, as Python's Config() dataclass supplies one.
        setYamlPath(doc, yamlPath, getPath(defaults, yamlPath));
      }
    }
    // newest job.py: several training nodes in swarm mode talk to the interchange server over TCP (spec §10.2b)
    if ((parsed.nnodes ?? 1) > 1) setYamlPath(doc, "ajet.interchange_server.interchange_method", "tcp");
    if (parsed.ensureNewExperiment) {
      const name = parsed.experimentName ?? String(doc.getIn(JOB_FIELDS.experimentName.yamlPath.split(".")) ?? "");
      const base = name === "" || name === READ_YAML_NAME ? "experiment" : name;
      setYamlPath(doc, JOB_FIELDS.experimentName.yamlPath, base + experimentStamp((deps.nowMs ?? Date.now)()));
    }
    this.#tree = doc.toJS() as Record<string, unknown>;
    this.values = Object.freeze(readJobValues(this.#tree, given));
    this.#doc = doc;
    this.warnings = Object.freeze(jobWarnings(this.values));
    for (const w of this.warnings) deps.logger?.warn(w);
  }

  /** Builds a job from YAML text used as the override base (Python `build_job_from_yaml`), then applies options. */
  static fromYaml(yamlText: string, options: Omit<AgentJetJobOptions, "baseYaml"> = {}, deps?: AgentJetJobDeps) {
    return new AgentJetJob({ ...options, baseYaml: yamlText }, deps);
  }

  /**
   * The YAML `sync_train_config` sends: `{"yaml_as_string": job.toYaml()}` (spec §10.5). Comments and unknown
   * keys of the base YAML survive; floats are written so PyYAML reads them as floats (`1.0e-07`).
   */
  toYaml(): string {
    return stringifyJobYaml(this.#doc);
  }

  /** Same text as {@link toYaml} (Python `dump_job_as_yaml`; a Node helper writes it to a path). */
  dumpJobAsYaml(): string {
    return this.toYaml();
  }

  /** A deep copy of the merged YAML as plain data (`config.ajet.rollout.num_repeat` …). */
  toConfig(): Record<string, unknown> {
    return structuredClone(this.#tree);
  }

  /** Reads any merged YAML key by dotted path, e.g. `get("ajet.rollout.temperature")`; `undefined` if absent. */
  get(dottedPath: string): unknown {
    return structuredClone(getPath(this.#tree, dottedPath));
  }

  /**
   * A new, re-validated job with extra YAML keys set (the escape hatch for keys without an option, like
   * Python's `job.config.ajet.* = …`). The original job is unchanged.
   * @param yamlValues dotted YAML key → value, e.g. `{ "ajet.rollout.temperature": 0.7 }`.
   */
  withYamlValues(yamlValues: Record<string, unknown>, deps?: AgentJetJobDeps): AgentJetJob {
    const doc = parseJobYaml(this.toYaml(), "job YAML");
    for (const [path, value] of Object.entries(yamlValues)) setYamlPath(doc, path, value);
    return new AgentJetJob({ baseYaml: stringifyJobYaml(doc) }, deps);
  }

  /** `ajet.rollout.num_repeat`: episodes per task (the GRPO group size). */
  get numRepeat(): number {
    return this.values.numRepeat;
  }
  /** `ajet.data.train_batch_size`: tasks per training step. */
  get batchSize(): number {
    return this.values.batchSize;
  }
  /** `ajet.rollout.max_env_worker`: the engine's episode-worker budget. */
  get maxEnvWorker(): number {
    return this.values.maxEnvWorker;
  }
  /** `ajet.swarm_mode_sample_collection_method` (spec §7.3); the throttle policy needs the "tasks" method. */
  get sampleCollectionMethod(): SampleCollectionMethod {
    return this.values.swarmModeSampleCollectionMethod;
  }
  /** `ajet.model.path`: the model the server trains. */
  get model(): string {
    return this.values.model;
  }
  /** `ajet.experiment_name` (after `ensureNewExperiment`). */
  get experimentName(): string {
    return this.values.experimentName;
  }
  /** `ajet.project_name`. */
  get projectName(): string {
    return this.values.projectName;
  }
  /** `ajet.enable_swarm_mode`. */
  get swarmMode(): boolean {
    return this.values.swarmMode;
  }
  /** The server's cap on in-flight episodes for this job (spec §5.2); see `serverEpisodeCapacity` in src/protocol. */
  get engineEpisodeCapacity(): number {
    return serverEpisodeCapacity(this.values);
  }
}

/**
 * Builds a job from YAML text as the override base, then applies `options` (spec §10.5 `build_job_from_yaml`).
 * @throws AgentJetJobConfigError as the constructor; `invalid_yaml` when the text does not parse.
 */
export function buildJobFromYaml(
  yamlText: string,
  options: Omit<AgentJetJobOptions, "baseYaml"> = {},
  deps?: AgentJetJobDeps,
): AgentJetJob {
  return AgentJetJob.fromYaml(yamlText, options, deps);
}
