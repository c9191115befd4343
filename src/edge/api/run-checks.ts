/**
 * @module edge/api/run-checks — the checks of a `POST /runs` body that need no dataset read, pure: its shape (no
 * prototype keys, bounded nesting), the rollout function and the swarms it needs, the hosts it may reach, the
 * generator counts and the inline rows against the Worker's limits. Each problem is an {@link Issue} naming the field,
 * the value and the fix (edge/ground/errors: the code decides the status).
 */
import { checkUrl, type OutboundPolicy } from "../../runtime/outbound.ts";
import type { RunSpec } from "../../scheduler/index.ts";
import { bindSwarms, swarmsOf, type RolloutFunction } from "../../sdk/contract.ts";
import type { ParsedDatasetSpec } from "../../tasks/index.ts";
import { DATASET_LIMIT_VARS, type DatasetLimits } from "../ground/dataset-limits.ts";
import { invalid, type Issue } from "../ground/errors.ts";
import type { ApiLimits } from "../ground/limits-config.ts";
import type { RunRequest } from "./run-request.ts";

/** Keys that could reach an object's prototype when copied; refused anywhere in a request body. */
const POISON_KEYS = new Set(["__proto__", "constructor", "prototype"]);
/** Deepest nesting of a request body (objects and arrays). */
export const MAX_BODY_DEPTH = 32;

/**
 * The first problem of a parsed JSON body's shape: a `__proto__` / `constructor` / `prototype` key (at any depth)
 * or nesting deeper than {@link MAX_BODY_DEPTH}. Walks iteratively (no recursion on attacker input).
 */
export function bodyShapeIssue(body: unknown): Issue | null {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: "", depth: 0 }];
  while (stack.length) {
    const { value, path, depth } = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= MAX_BODY_DEPTH) return invalid(path || "(body)", `the body is nested more than ${MAX_BODY_DEPTH} levels deep`);
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (POISON_KEYS.has(k)) return invalid(at, `the key "${k}" is not allowed anywhere in a run spec (it could reach an object's prototype); rename it`);
      stack.push({ value: v, path: at, depth: depth + 1 });
    }
  }
  return null;
}

/** The spec's rollout function exists and the run names every swarm it needs. */
export function functionIssues(spec: RunSpec, functions: Readonly<Record<string, RolloutFunction>>): Issue[] {
  const fn = functions[spec.function];
  if (!fn) return [invalid("function", `no rollout function "${spec.function}"; known: ${Object.keys(functions).join(", ")} (add one with \`ajet-edge new NAME\`)`)];
  const { missing } = bindSwarms(fn, spec.swarms);
  return missing.length ? [invalid("swarms", `function "${fn.name}" needs swarms named ${swarmsOf(fn).join(", ")}; missing ${missing.join(", ")}`)] : [];
}

/**
 * The run's sandboxes: a function that declares `sandbox: true` needs the run's `sandbox` block; a run with one
 * needs this Worker's backend (`backendMissing`: the line saying what to set, or null) and every name of its
 * `sandbox.secrets` set by the run's secrets or the operator's.
 */
export function sandboxIssues(spec: RunSpec, functions: Readonly<Record<string, RolloutFunction>>, backendMissing: string | null, operatorSecrets: Readonly<Record<string, string>>): Issue[] {
  const fn = functions[spec.function];
  const enabled = spec.sandbox?.enabled === true;
  if (fn?.sandbox && !enabled) {
    return [invalid("sandbox", `function "${fn.name}" runs code in a sandbox (it declares sandbox: true), but this run has ${spec.sandbox ? "sandbox.enabled false" : 'no "sandbox" block'}; add "sandbox": {} to the run spec (ajet-edge dev/run: --sandbox)`)];
  }
  if (!enabled) return [];
  const issues: Issue[] = backendMissing ? [invalid("sandbox", backendMissing)] : [];
  spec.sandbox!.secrets.forEach((name, i) => {
    if (spec.secrets[name] === undefined && operatorSecrets[name] === undefined) {
      issues.push(invalid(`sandbox.secrets.${i}`, `${name} is set by neither the run's secrets nor the operator's AJET_SECRETS; set it, or remove it from sandbox.secrets`));
    }
  });
  return issues;
}

/** Swarm and dataset URLs outside the allowed hosts, as issues naming the field and the setting to change. */
export function hostIssues(spec: RunRequest, policy: OutboundPolicy): Issue[] {
  const issues: Issue[] = [];
  spec.swarms.forEach((s, i) => {
    const refused = checkUrl(s.url, policy.allowed);
    if (refused) issues.push(invalid(`swarms.${i}.url`, refused.message));
  });
  spec.datasets.forEach((d, i) => {
    // r2://BUCKET/KEY is read through the Worker's own R2 binding (AJET_DATASET_BUCKETS), not over the network
    const refused = d.url !== undefined && !d.url.startsWith("r2://") ? checkUrl(d.url, policy.allowed) : null;
    if (refused) issues.push(invalid(`datasets.${i}.url`, refused.message));
  });
  const hook = spec.weightSyncWebhook !== undefined ? checkUrl(spec.weightSyncWebhook, policy.allowed) : null;
  if (hook) issues.push(invalid("weightSyncWebhook", hook.message));
  return issues;
}

/** Generated task counts over the maximum (`too_large`; checked before anything is generated). */
export function generateIssues(spec: RunRequest, limits: ApiLimits): Issue[] {
  return spec.datasets.flatMap((d, i): Issue[] =>
    d.generate && d.generate.count > limits.maxGeneratedTasks
      ? [{ code: "too_large", path: `datasets.${i}.generate.count`, message: `generate.count ${d.generate.count} is over the maximum of ${limits.maxGeneratedTasks} generated tasks per dataset (AJET_MAX_GENERATED_TASKS); generate fewer, or give the tasks as a dataset URL` }]
      : [],
  );
}

/**
 * The inline rows of a request over the Worker's limits (rows and bytes over all datasets: `too_large`), each issue
 * naming the limit and the alternative. Cheap: runs before any row is mapped.
 */
export function inlineRowIssues(readers: readonly ParsedDatasetSpec[], limits: DatasetLimits): Issue[] {
  const issues: Issue[] = [];
  let rows = 0;
  let bytes = 0;
  const encoder = new TextEncoder();
  for (const [i, r] of readers.entries()) {
    if (!r?.tasks) continue;
    rows += r.tasks.length;
    if (rows > limits.maxInlineRows) {
      issues.push({
        code: "too_large",
        path: `datasets.${i}.tasks`,
        message: `inline tasks: ${rows} rows is over this Worker's limit of ${limits.maxInlineRows} (${DATASET_LIMIT_VARS.maxInlineRows}); use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row`,
      });
      continue;
    }
    for (const row of r.tasks) {
      bytes += encoder.encode(JSON.stringify(row)).byteLength;
      if (bytes > limits.maxInlineBytes) break;
    }
    if (bytes > limits.maxInlineBytes) {
      issues.push({
        code: "too_large",
        path: `datasets.${i}.tasks`,
        message: `inline tasks: over ${limits.maxInlineBytes} bytes of rows, this Worker's limit (${DATASET_LIMIT_VARS.maxInlineBytes}); use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row`,
      });
    }
  }
  return issues;
}
