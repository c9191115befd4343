/**
 * @module job/validate — the construction-time rules of AgentJetJob (spec §10.3) and the swarm-configuration
 * warning about `max_env_worker`. Messages name the option and the YAML key and say how to fix them.
 */
import type { z } from "zod";
import { AgentJetJobConfigError } from "./errors.ts";
import { AgentJetJobOptions, JOB_FIELD_NAMES, JOB_FIELDS } from "./options.ts";
import type { AgentJetJobValues, JobFieldName } from "./options.ts";
import { getPath, pythonFloatRepr } from "./yaml-text.ts";

/** Options after the shape check (`null` already means the same as `undefined`). */
export type ParsedJobOptions = z.output<typeof AgentJetJobOptions>;

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value === "bigint" ? `${value}n` : String(value);
}

/**
 * Checks the options' shape with zod.
 * @throws AgentJetJobConfigError (`invalid_option`) for an unknown option (with the list of known ones) or a
 *   value of the wrong type or range, e.g.
 *   `Invalid AgentJetJob option \`numRepeat\` (ajet.rollout.num_repeat): … Fix: …`
 */
export function parseJobOptions(raw: unknown): ParsedJobOptions {
  const parsed = AgentJetJobOptions.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const known = [...JOB_FIELD_NAMES, "ensureNewExperiment", "baseYaml"].join(", ");
    throw new AgentJetJobConfigError(
      `Unknown AgentJetJob option ${issue.keys.map((k) => `\`${k}\``).join(", ")}. Known options: ${known}. ` +
        "Keys without an option are set in the YAML (baseYaml).",
      { code: "invalid_option", option: issue.keys[0] },
    );
  }
  const name = String(issue.path[0] ?? "");
  const got = (raw as Record<string, unknown> | null)?.[name];
  const row = JOB_FIELDS[name as JobFieldName] as (typeof JOB_FIELDS)[JobFieldName] | undefined;
  throw new AgentJetJobConfigError(
    `Invalid AgentJetJob option \`${name}\`${row ? ` (${row.yamlPath})` : ""}: ${issue.message} (got ${show(got)}).` +
      (row ? ` Fix: ${row.fix}.` : ""),
    { code: "invalid_option", option: name, ...(row ? { yamlPath: row.yamlPath } : {}) },
  );
}

const LENGTH_OPTIONS = ["maxPromptLength", "maxResponseLength", "maxModelLen", "maxResponseLengthInOneTurn"] as const;

/**
 * The four length options are all given or none (spec §10.3; checked on the options, like the Python job).
 * @throws AgentJetJobConfigError (`length_options`) starting with the Python message, then which ones were given.
 */
export function assertLengthOptionsTogether(options: ParsedJobOptions): void {
  const given = LENGTH_OPTIONS.filter((k) => options[k] != null);
  if (given.length === 0 || given.length === LENGTH_OPTIONS.length) return;
  throw new AgentJetJobConfigError(
    "(`max_prompt_length`, `max_response_length`, `max_model_len`, `max_response_length_in_one_turn`) " +
      `must all be None or all be non-None: you set ${given.join(", ")} only. ` +
      `Set all four of ${LENGTH_OPTIONS.join(", ")}, or none of them (and edit the YAML instead).`,
    { code: "length_options", option: LENGTH_OPTIONS.find((k) => !given.includes(k)) },
  );
}

/**
 * Reads the merged value of every option from the YAML tree and checks it.
 * @param given the options the caller set (named in messages; others are named by their YAML key).
 * @throws AgentJetJobConfigError for a bad merged value, a token-length rule, a LoRA rule (exact Python messages
 *   first) or the `trinity` backbone.
 */
export function readJobValues(tree: unknown, given: ReadonlySet<string>): AgentJetJobValues {
  const values: Record<string, unknown> = {};
  for (const name of JOB_FIELD_NAMES) {
    const { yamlPath, schema, fix } = JOB_FIELDS[name];
    const raw = getPath(tree, yamlPath);
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const where = given.has(name) ? `option \`${name}\` (${yamlPath})` : `YAML key \`${yamlPath}\` (option ${name})`;
      const message = parsed.error.issues[0]?.message ?? "invalid value";
      throw new AgentJetJobConfigError(`Invalid AgentJetJob ${where}: ${message} (got ${show(raw)}). Fix: ${fix}.`, {
        code: "invalid_option",
        option: name,
        yamlPath,
      });
    }
    values[name] = parsed.data;
  }
  const merged = values as AgentJetJobValues;
  assertMergedRules(merged);
  return merged;
}

/** Spec §10.3 rules on merged values (newest job.py: LoRA checks use merged values too). */
function assertMergedRules(v: AgentJetJobValues): void {
  if (v.maxPromptLength + v.maxResponseLength > v.maxModelLen) {
    throw new AgentJetJobConfigError(
      `illegal token length: maxPromptLength (${v.maxPromptLength}) + maxResponseLength (${v.maxResponseLength}) ` +
        `must be <= maxModelLen (${v.maxModelLen}) (ajet.data.max_prompt_length + ajet.data.max_response_length ` +
        "<= ajet.rollout.max_model_len). Raise maxModelLen or lower the other two.",
      { code: "token_length", option: "maxModelLen", yamlPath: JOB_FIELDS.maxModelLen.yamlPath },
    );
  }
  if (v.maxResponseLengthInOneTurn > v.maxResponseLength) {
    throw new AgentJetJobConfigError(
      `illegal token length: maxResponseLengthInOneTurn (${v.maxResponseLengthInOneTurn}) must be <= ` +
        `maxResponseLength (${v.maxResponseLength}). Lower maxResponseLengthInOneTurn or raise maxResponseLength.`,
      { code: "token_length", option: "maxResponseLengthInOneTurn" },
    );
  }
  if (v.loraRank > 0) assertLoraRules(v);
  if (v.backbone === "trinity") {
    throw new AgentJetJobConfigError(
      'Trinity backbone is not yet supported in AgentJetJob. Use backbone "verl" (ajet.backbone).',
      { code: "not_implemented", option: "backbone", yamlPath: JOB_FIELDS.backbone.yamlPath },
    );
  }
}

function assertLoraRules(v: AgentJetJobValues): void {
  const lora = (message: string, option: JobFieldName): never => {
    throw new AgentJetJobConfigError(message, { code: "lora", option, yamlPath: JOB_FIELDS[option].yamlPath });
  };
  if (v.loraLoadFormat !== "safetensors") {
    lora(
      `When lora_rank > 0, lora_load_format must be 'safetensors', got '${v.loraLoadFormat}'. ` +
        'Set loraLoadFormat: "safetensors".',
      "loraLoadFormat",
    );
  }
  if (v.layeredSummon !== true) {
    lora("When lora_rank > 0, layered_summon must be True. Set layeredSummon: true.", "layeredSummon");
  }
  if (v.lr === null) lora("lr should be provided for lora training. Set lr, e.g. 1e-5 or larger.", "lr");
  if (v.lr !== null && v.lr <= 1e-5) {
    lora(
      `lr should usually be greater than 1e-5 for lora training, got ${pythonFloatRepr(v.lr)}. Set lr above 1e-5.`,
      "lr",
    );
  }
}

/**
 * Non-fatal advice (swarm-configuration notes): the engine runs `ceil(max_env_worker / num_repeat) × num_repeat`
 * workers, so a `maxEnvWorker` that is not a multiple of `numRepeat` is silently rounded up.
 * @returns the warning texts (empty when all is well).
 */
export function jobWarnings(v: AgentJetJobValues): string[] {
  const warnings: string[] = [];
  if (v.maxEnvWorker % v.numRepeat !== 0) {
    const down = Math.max(v.numRepeat, Math.floor(v.maxEnvWorker / v.numRepeat) * v.numRepeat);
    const up = Math.ceil(v.maxEnvWorker / v.numRepeat) * v.numRepeat;
    warnings.push(
      `maxEnvWorker (ajet.rollout.max_env_worker = ${v.maxEnvWorker}) is not a multiple of numRepeat ` +
        `(ajet.rollout.num_repeat = ${v.numRepeat}): the engine runs ceil(${v.maxEnvWorker} / ${v.numRepeat}) × ` +
        `${v.numRepeat} = ${up} episode workers. Set maxEnvWorker to a multiple of numRepeat (e.g. ${down} or ${up}).`,
    );
  }
  return warnings;
}
