/**
 * @module edge/ground/run-job — the run's `AgentJetJob` (issue 8 §1): the spec's `job` options (those `src/job` validates,
 * `baseYaml` = the YAML whose keys have no option: the source of truth, options are sparse overrides, seed 003),
 * with the run's resolved `batchSize`, `numRepeat` and `maxEnvWorker`, so the config the server is synced with
 * always batches exactly like the run's windows.
 */
import { parse } from "yaml";
import { AgentJetJob, AgentJetJobConfigError, JOB_OPTION_YAML_PATHS, type AgentJetJobOptions } from "../../job/index.ts";
import type { RunSpec } from "../../scheduler/index.ts";
import type { Issue } from "./errors.ts";

/** the keys that decide how the server closes a batch: the run counts and votes by them (its core reads the options) */
const BATCH_KEYS = ["batchSize", "numRepeat", "maxEnvWorker", "swarmModeSampleCollectionMethod"] as const;

/** The job of a validated spec. @throws AgentJetJobConfigError naming the option or YAML key */
export function runJob(spec: Pick<RunSpec, "job" | "batchSize" | "numRepeat" | "maxEnvWorker">): AgentJetJob {
  return new AgentJetJob({ ...(spec.job as AgentJetJobOptions), batchSize: spec.batchSize, numRepeat: spec.numRepeat, maxEnvWorker: spec.maxEnvWorker });
}

/**
 * Before the spec is parsed: a `job.baseYaml` that sets the batch keys (`ajet.data.train_batch_size`,
 * `ajet.rollout.num_repeat`, `ajet.rollout.max_env_worker`, `ajet.swarm_mode_sample_collection_method`) supplies them when neither the top level nor a `job`
 * option does — the YAML is the source of truth, not the spec's defaults — and a top-level or option value that
 * disagrees with the YAML's is an issue. Anything else is left to the parse.
 * @returns the body to parse (a copy when changed) and the job's own issues (`job.<option>`), if any
 */
export function withJobDefaults(body: unknown): { body: unknown; issues: Issue[] } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return { body, issues: [] };
  const spec = body as Record<string, unknown>;
  const job = spec["job"];
  if (job === undefined) return { body, issues: [] };
  if (job === null || typeof job !== "object" || Array.isArray(job)) return { body, issues: [{ code: "invalid", path: "job", message: "job must be an object of AgentJetJob options, e.g. {\"model\": \"Qwen/Qwen2.5-7B-Instruct\"}" }] };
  let built: AgentJetJob;
  try {
    built = new AgentJetJob(job as AgentJetJobOptions);
  } catch (err) {
    if (err instanceof AgentJetJobConfigError) return { body, issues: [{ code: "invalid", path: err.option ? `job.${err.option}` : "job", message: err.message }] };
    return { body, issues: [{ code: "invalid", path: "job", message: err instanceof Error ? err.message : String(err) }] };
  }
  const options = job as Record<string, unknown>;
  const baseYaml = options["baseYaml"];
  if (typeof baseYaml !== "string") return { body, issues: [] };
  const written = parse(baseYaml) as unknown;
  const filled: Record<string, unknown> = { ...options };
  const issues: Issue[] = [];
  for (const key of BATCH_KEYS) {
    const yamlPath = JOB_OPTION_YAML_PATHS[key];
    const inYaml = getPath(written, yamlPath);
    if (inYaml === undefined) continue; // the YAML leaves it to the spec (or the defaults)
    const given = spec[key] ?? options[key];
    if (given === undefined) filled[key] = built.values[key];
    else if (given !== inYaml) {
      const where = spec[key] !== undefined ? key : `job.${key}`;
      issues.push({ code: "invalid", path: where, message: `${where} ${String(given)} disagrees with job.baseYaml's ${yamlPath} ${String(inYaml)}: the server would batch differently from the run's windows; set one of them` });
    }
  }
  return { body: { ...spec, job: filled }, issues };
}

function getPath(tree: unknown, dotted: string): unknown {
  return dotted.split(".").reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), tree);
}
