/**
 * @module edge/api/create-run — the `POST /runs` pipeline, one step after the other: validate the body (its shape,
 * the job, the spec's fields, the function, the hosts, the secrets, the limits), admit the run in its token's quota,
 * plan and stage its datasets in the run's Durable Object (inline rows in bounded chunks), create the run there (the
 * object indexes URL datasets and checks what needs them), register it in the RunIndex. Errors are data: the answer
 * is the new run's view or a problem (a title and its issues, each with a code that decides the status, edge/ground/
 * errors); the quota slot of a run that was not created is given back.
 */
import type { Task } from "../../protocol/index.ts";
import { outboundPolicy } from "../../runtime/outbound.ts";
import type { RolloutFunction } from "../../sdk/contract.ts";
import { DEFAULT_SPLIT, datasetNamespace, formatOf, tasksFromObjects, withAnswerReaders, type ParsedDatasetSpec } from "../../tasks/index.ts";
import { CAPS, capsFrom } from "../ground/caps.ts";
import { datasetLimits, type DatasetLimits } from "../ground/dataset-limits.ts";
import type { Env } from "../ground/env.ts";
import { invalid, type Issue } from "../ground/errors.ts";
import { limitsFrom } from "../ground/limits-config.ts";
import { runJob, withJobDefaults } from "../ground/run-job.ts";
import { parseOperatorSecrets, runSecretsIssues } from "../ground/secrets.ts";
import { sealSecrets, secretsKeyProblem, SECRETS_KEY_VAR } from "../ground/secrets-at-rest.ts";
import type { RunView, SourcePlan } from "../run/run-views.ts";
import { bodyShapeIssue, functionIssues, generateIssues, hostIssues, inlineRowIssues, sandboxIssues } from "./run-checks.ts";
import { workerSandboxBackend } from "../ground/sandbox-backend.ts";
import { runIndexStub } from "./run-index.ts";
import { specBoundsIssues } from "./spec-bounds.ts";
import { parseRunRequest, type RunRequest } from "./run-request.ts";
import { callObject } from "../ground/do-call.ts";

/** What went wrong, as data: a title (the error's message) and the issues (their codes decide the status). */
export interface RunProblem {
  title: string;
  issues: Issue[];
}

/** The answer of {@link createRun}: the new run's view, or the problem. */
export type CreateRunOutcome = { ok: true; view: RunView } | ({ ok: false } & RunProblem);

/** What the pipeline needs beyond the body. */
export interface CreateRunDeps {
  env: Env;
  /** the Worker's rollout functions, by name */
  functions: Readonly<Record<string, RolloutFunction>>;
  /** the caller's principal (edge/api/auth): its runs-in-flight quota */
  principal: string;
  /** the instant of the request (epoch ms): the run's id and creation time */
  nowMs: number;
}

/** Serialised tasks per `stageTasks` call (an RPC carries at most 32 MiB; a bounded chunk keeps both sides small). */
const STAGE_CHUNK_BYTES = 1024 * 1024;
const STAGE_CHUNK_TASKS = 2000;

type LoadReports = Record<string, { accepted: number; rejected: number; namespace: string }>;

/** A new run's id: `run-<UTC yyyymmddhhmmss>-<8 hex>`. */
export function newRunId(nowMs: number): string {
  return `run-${new Date(nowMs).toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${crypto.randomUUID().slice(0, 8)}`;
}

/**
 * Validates a parsed `POST /runs` body: its shape, then its counts, sizes and characters (edge/api/spec-bounds, before
 * any other work), then every problem at once (the job, the spec's fields and each dataset's), then
 * the function, the hosts and the secrets; then the generator counts (`too_large`) and the job's YAML.
 * @returns the request and its job YAML, or the problem
 */
export function validateRun(body: unknown, deps: Pick<CreateRunDeps, "env" | "functions">): { spec: RunRequest; jobYaml: string } | RunProblem {
  const shape = bodyShapeIssue(body);
  if (shape) return { title: "invalid run spec", issues: [shape] };
  const bounds = specBoundsIssues(body, capsFrom(deps.env));
  if (bounds.length) return { title: bounds.some((i) => i.code === "too_large") ? "run spec over the Worker's caps" : "invalid run spec", issues: bounds };
  const operator = parseOperatorSecrets(deps.env.AJET_SECRETS).secrets;
  const policy = outboundPolicy(deps.env.AJET_ALLOWED_HOSTS, operator);
  const job = withJobDefaults(body);
  const parsed = parseRunRequest(job.body);
  const issues = [
    ...job.issues,
    ...(parsed.success
      ? [
          ...functionIssues(parsed.data, deps.functions),
          ...sandboxIssues(parsed.data, deps.functions, workerSandboxBackend(deps.env, { fetch: (i, init) => fetch(i, init) }).missing ?? null, operator),
          ...hostIssues(parsed.data, policy),
          ...runSecretsIssues({ runSecrets: parsed.data.secrets, operatorSecrets: operator, swarms: parsed.data.swarms, allowed: policy.allowed }),
        ]
      : parsed.issues.map((i) => invalid(i.path, i.message))),
  ];
  if (!parsed.success || issues.length) return { title: "invalid run spec", issues };
  const spec = parsed.data;
  // a run's secrets are only ever stored encrypted (edge/ground/secrets-at-rest): no operator key, no run with secrets
  const keyProblem = Object.keys(spec.secrets).length > 0 ? secretsKeyProblem(deps.env.AJET_SECRETS_KEY) : null;
  if (keyProblem) return { title: "the Worker cannot keep secrets", issues: [{ code: "unconfigured", path: SECRETS_KEY_VAR, message: keyProblem }] };
  const tooMany = generateIssues(spec, limitsFrom(deps.env));
  if (tooMany.length) return { title: "too many generated tasks", issues: tooMany };
  let jobYaml: string;
  try {
    jobYaml = runJob(spec).toYaml();
  } catch (err) {
    return { title: "invalid run spec", issues: [invalid("job", err instanceof Error ? err.message : String(err))] };
  }
  // the stored spec is one row: whatever passed the caps above, it must fit well under SQLite's 2 MB
  const stored = new TextEncoder().encode(JSON.stringify(withoutRows(spec))).byteLength + new TextEncoder().encode(jobYaml).byteLength;
  const cap = capsFrom(deps.env).storedSpecBytes;
  if (stored > cap) {
    const message = `the run spec (inline rows apart) and its job YAML take ${stored} bytes, over the cap of ${cap}; ${CAPS.storedSpecBytes.around}`;
    return { title: "run spec over the Worker's caps", issues: [{ code: "too_large", path: "(body)", message }] };
  }
  return { spec, jobYaml };
}

/** Runs the pipeline for one `POST /runs` body (parsed JSON). @throws what the Durable Objects throw (a 500) */
export async function createRun(body: unknown, deps: CreateRunDeps): Promise<CreateRunOutcome> {
  const valid = validateRun(body, deps);
  if ("title" in valid) return { ok: false, ...valid };
  const { spec, jobYaml } = valid;
  const { env, principal, nowMs } = deps;
  const limits = limitsFrom(env);
  const runId = newRunId(nowMs);
  const quota = env.RUN_QUOTA.get(env.RUN_QUOTA.idFromName(principal));
  const admitted = await quota.admit(runId, limits.maxRunsInFlight);
  if (!admitted.ok) {
    const message = `this token has ${admitted.inFlight} runs in flight, the maximum (AJET_MAX_RUNS_IN_FLIGHT = ${admitted.max}); stop one (POST /runs/:id/stop) or wait for one to finish`;
    return { ok: false, title: "too many runs in flight", issues: [{ code: "too_many_runs", path: "(token)", message }] };
  }
  try {
    const stub = env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
    const planned = await planDatasets(spec, spec.datasets, datasetLimits(env), (source, start, tasks) => stub.stageTasks({ runId, source, start, tasks, scope: spec.taskIdScope ?? "run" }));
    if ("title" in planned) {
      await callObject(() => quota.release(runId));
      return { ok: false, ...planned };
    }
    // the object reads URL datasets itself (index pass), then checks every dataset has tasks, the windows fit and
    // the planned episodes
    // the object gets (and stores) the secrets only sealed under a data key of this run
    const sealed = Object.keys(spec.secrets).length > 0 ? { sealedSecrets: await sealSecrets(spec.secrets, runId, env.AJET_SECRETS_KEY) } : {};
    const created = await stub.create({ runId, spec: { ...withoutRows(spec), secrets: {} }, ...sealed, sources: planned.sources, loadReports: planned.reports, principal, jobYaml, maxEpisodesPerRun: limits.maxEpisodesPerRun });
    if (!created.view) {
      await callObject(() => quota.release(runId));
      const title = created.issues.some((i: Issue) => i.code === "too_many_episodes") ? "too many episodes" : "invalid datasets";
      return { ok: false, title, issues: created.issues };
    }
    await callObject(() => runIndexStub(env).add({ runId, function: spec.function, createdAtMs: nowMs }));
    return { ok: true, view: created.view };
  } catch (err) {
    await callObject(() => quota.release(runId));
    throw err;
  }
}

/**
 * How the Durable Object reads each dataset. Inline rows are mapped here (their refusals reported by line) and
 * staged in the object in bounded chunks; a URL becomes a `file` plan the object indexes itself; a generator a
 * `generate` plan (tasks made when first needed).
 * @returns the plans and load reports, or the problem (`too_large` inline rows, `invalid` datasets naming `datasets.N`)
 */
async function planDatasets(
  spec: RunRequest,
  readers: readonly ParsedDatasetSpec[],
  limits: DatasetLimits,
  stage: (source: string, start: number, tasks: Task[]) => Promise<void>,
): Promise<{ sources: Record<string, SourcePlan>; reports: LoadReports } | RunProblem> {
  const tooLarge = inlineRowIssues(readers, limits);
  if (tooLarge.length) return { title: "inline tasks too large", issues: tooLarge };
  const sources: Record<string, SourcePlan> = {};
  const reports: LoadReports = {};
  const issues: Issue[] = [];
  const inline: Array<{ name: string; tasks: Task[] }> = [];
  for (const [i, d] of spec.datasets.entries()) {
    const r = readers[i];
    if (!r) continue;
    const split = r.split ?? DEFAULT_SPLIT;
    const withReaders = r.answerReaders ? { answerReaders: [...r.answerReaders] } : {};
    if (r.url !== undefined) {
      sources[d.name] = { type: "file", url: r.url, format: r.format ?? formatOf(r.url), options: { name: r.name, kind: r.kind, split }, ...withReaders };
    } else if (r.generate !== undefined) {
      sources[d.name] = { type: "generate", settings: { ...r.generate, name: r.name }, ...withReaders };
      reports[d.name] = { accepted: r.generate.count, rejected: 0, namespace: datasetNamespace(r) };
    } else if (r.tasks !== undefined) {
      const loaded = tasksFromObjects(r.tasks, { name: r.name, kind: r.kind, split });
      if (loaded.tasks.length === 0) {
        const why = loaded.report.rejected.slice(0, 3).map((x) => `line ${x.line}: ${x.reason}`).join("; ");
        issues.push(invalid(`datasets.${i}`, `dataset "${d.name}" has no usable task${why ? ` (${why})` : ""}`));
        continue;
      }
      inline.push({ name: d.name, tasks: loaded.tasks.map((t) => withAnswerReaders(t, r.answerReaders)) });
      sources[d.name] = { type: "stored", count: loaded.tasks.length };
      reports[d.name] = { accepted: loaded.report.accepted, rejected: loaded.report.rejected.length, namespace: datasetNamespace(r) };
    }
  }
  if (issues.length) return { title: "invalid datasets", issues };
  for (const { name, tasks } of inline) for (const chunk of stageChunks(tasks)) await stage(name, chunk.start, chunk.tasks);
  return { sources, reports };
}

/** Inline rows cut into chunks of at most {@link STAGE_CHUNK_TASKS} tasks and about {@link STAGE_CHUNK_BYTES} bytes. */
function stageChunks(tasks: readonly Task[]): Array<{ start: number; tasks: Task[] }> {
  const chunks: Array<{ start: number; tasks: Task[] }> = [];
  let start = 0;
  while (start < tasks.length) {
    let end = start;
    let bytes = 0;
    while (end < tasks.length && end - start < STAGE_CHUNK_TASKS && (end === start || bytes < STAGE_CHUNK_BYTES)) {
      bytes += JSON.stringify(tasks[end]).length;
      end += 1;
    }
    chunks.push({ start, tasks: tasks.slice(start, end) });
    start = end;
  }
  return chunks;
}

/** The spec as stored: the datasets without their inline rows (they are stored one row per task, BC-53). */
function withoutRows(spec: RunRequest): RunRequest {
  return { ...spec, datasets: spec.datasets.map(({ tasks: _rows, ...rest }) => rest) };
}
