/**
 * @module edge/routes/runs — the runs resource (issue 3 §4): `POST /runs` validates a run spec (errors name the
 * field path), loads its datasets and creates the run's Durable Object; `GET /runs/:id` shows its status;
 * `POST /runs/:id/stop` drains it; `GET /runs/:id/report` gives the summary and, for eval runs, the eval report;
 * `GET /runs/:id/episodes[?step=N]` lists the episodes whose reward the server accepted (the audit ledger).
 */
import { Hono } from "hono";
import { z } from "zod";
import { bindSwarms, swarmsOf, type RolloutFunction } from "../../sdk/contract.ts";
import { windowCapacityIssues, type RunSpec } from "../../scheduler/index.ts";
import { loadDataset, datasetNamespace, type LoadResult } from "../../tasks/index.ts";
import type { Task } from "../../protocol/index.ts";
import { checkUrl, outboundFetch, outboundPolicy, type OutboundPolicy } from "../../runtime/outbound.ts";
import type { AppEnv } from "../app.ts";
import type { Env } from "../env.ts";
import { ApiError, type Issue } from "../errors.ts";
import { limitsFrom, type ApiLimits } from "../limits-config.ts";
import { parseRunRequest, type RunRequest } from "../run-request.ts";
import { parseOperatorSecrets, runSecretsIssues } from "../secrets.ts";

function checkFunction(spec: RunSpec, functions: Readonly<Record<string, RolloutFunction>>): Issue[] {
  const fn = functions[spec.function];
  if (!fn) return [{ path: "function", message: `no rollout function "${spec.function}"; known: ${Object.keys(functions).join(", ")} (add one with \`ajet-edge new NAME\`)` }];
  const { missing } = bindSwarms(fn, spec.swarms);
  return missing.length ? [{ path: "swarms", message: `function "${fn.name}" needs swarms named ${swarmsOf(fn).join(", ")}; missing ${missing.join(", ")}` }] : [];
}

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
    if (depth >= MAX_BODY_DEPTH) return { path: path || "(body)", message: `the body is nested more than ${MAX_BODY_DEPTH} levels deep` };
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (POISON_KEYS.has(k)) return { path: at, message: `the key "${k}" is not allowed anywhere in a run spec (it could reach an object's prototype); rename it` };
      stack.push({ value: v, path: at, depth: depth + 1 });
    }
  }
  return null;
}

/** Swarm and dataset URLs outside the allowed hosts, as issues naming the field and the setting to change. */
function hostIssues(spec: RunRequest, policy: OutboundPolicy): Issue[] {
  const issues: Issue[] = [];
  spec.swarms.forEach((s, i) => {
    const refused = checkUrl(s.url, policy.allowed);
    if (refused) issues.push({ path: `swarms.${i}.url`, message: refused.message });
  });
  spec.datasets.forEach((d, i) => {
    const refused = d.url !== undefined ? checkUrl(d.url, policy.allowed) : null;
    if (refused) issues.push({ path: `datasets.${i}.url`, message: refused.message });
  });
  return issues;
}

/** Generated task counts over the maximum (checked before anything is generated). */
function generateIssues(spec: RunRequest, limits: ApiLimits): Issue[] {
  return spec.datasets.flatMap((d, i) =>
    d.generate && d.generate.count > limits.maxGeneratedTasks
      ? [{ path: `datasets.${i}.generate.count`, message: `generate.count ${d.generate.count} is over the maximum of ${limits.maxGeneratedTasks} generated tasks per dataset (AJET_MAX_GENERATED_TASKS); generate fewer, or give the tasks as a dataset URL` }]
      : [],
  );
}

/**
 * The most episodes a run can plan (retries not counted): train runs serve at most `maxSteps` windows of
 * `batchSize` groups and at most `epochs` passes over the tasks; eval runs every task `epochs` times; each group
 * is `numRepeat` episodes.
 */
export function plannedEpisodes(spec: RunSpec, taskCounts: Readonly<Record<string, number>>): number {
  const tasks = Object.values(taskCounts).reduce((a, b) => a + b, 0);
  const groups = spec.episodeType === "train" && spec.maxSteps !== null ? Math.min(spec.maxSteps * spec.batchSize, spec.epochs * tasks) : spec.epochs * tasks;
  return groups * spec.numRepeat;
}

/** Loads every dataset (URL, inline rows or the generator) with `fetch`. @throws ApiError 400 naming `datasets.N` */
async function loadDatasets(spec: RunRequest, fetch: typeof globalThis.fetch): Promise<{ tasks: Record<string, Task[]>; reports: Record<string, { accepted: number; rejected: number; namespace: string }> }> {
  const tasks: Record<string, Task[]> = {};
  const reports: Record<string, { accepted: number; rejected: number; namespace: string }> = {};
  const issues: Issue[] = [];
  for (const [i, d] of spec.datasets.entries()) {
    let loaded: LoadResult;
    try {
      loaded = await loadDataset(d, { fetch });
    } catch (err) {
      issues.push({ path: `datasets.${i}`, message: err instanceof Error ? err.message : String(err) });
      continue;
    }
    if (loaded.tasks.length === 0) {
      const why = loaded.report.rejected.slice(0, 3).map((r) => `line ${r.line}: ${r.reason}`).join("; ");
      issues.push({ path: `datasets.${i}`, message: `dataset "${d.name}" has no usable task${why ? ` (${why})` : ""}` });
      continue;
    }
    tasks[d.name] = loaded.tasks;
    reports[d.name] = { accepted: loaded.report.accepted, rejected: loaded.report.rejected.length, namespace: datasetNamespace(d) };
  }
  if (issues.length) throw new ApiError(400, "invalid datasets", issues);
  return { tasks, reports };
}

const RunIdParam = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/);

function stubOf(env: Env, runId: string) {
  if (!RunIdParam.safeParse(runId).success) throw new ApiError(400, "invalid run id", [{ path: "id", message: "a run id has letters, digits and _ . : - only" }]);
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
}

/** The Durable Object answers null for a run it does not hold: a 404. */
async function orNotFound<T>(runId: string, call: () => Promise<T | null>): Promise<T> {
  const value = await call();
  if (value === null) throw new ApiError(404, `no run ${runId}`, [{ path: "id", message: "no run with this id; create one with POST /runs" }]);
  return value;
}

/** The runs routes, bound to a registry of rollout functions. */
export function runsRoutes(functions: Readonly<Record<string, RolloutFunction>>) {
  return new Hono<AppEnv>()
    .post("/", async (c) => {
      const body: unknown = await c.req.json().catch(() => {
        throw new ApiError(400, "the body must be JSON", [{ path: "(body)", message: "send a JSON run spec with content-type application/json" }]);
      });
      const shape = bodyShapeIssue(body);
      if (shape) throw new ApiError(400, "invalid run spec", [shape]);
      const limits = limitsFrom(c.env);
      const operator = parseOperatorSecrets(c.env.AJET_SECRETS).secrets;
      const policy = outboundPolicy(c.env.AJET_ALLOWED_HOSTS, operator);
      // every problem at once (the spec's fields and each dataset's), then the function, the hosts and the secrets
      const parsed = parseRunRequest(body);
      const issues = parsed.success
        ? [
            ...checkFunction(parsed.data, functions),
            ...hostIssues(parsed.data, policy),
            ...runSecretsIssues({ runSecrets: parsed.data.secrets, operatorSecrets: operator, swarms: parsed.data.swarms, allowed: policy.allowed }),
          ]
        : parsed.issues;
      if (!parsed.success || issues.length) throw new ApiError(400, "invalid run spec", issues);
      const spec = parsed.data;
      const tooMany = generateIssues(spec, limits);
      if (tooMany.length) throw new ApiError(413, "too many generated tasks", tooMany);
      const { tasks, reports } = await loadDatasets(spec, outboundFetch((input, init) => fetch(input, init), policy) as typeof fetch);
      const counts = Object.fromEntries(Object.entries(tasks).map(([name, t]) => [name, t.length]));
      // a train source with fewer tasks than one window takes from it would stall the run (never one task twice a window)
      const capacity = windowCapacityIssues(spec, counts);
      if (capacity.length) throw new ApiError(400, "invalid datasets", capacity);
      const planned = plannedEpisodes(spec, counts);
      if (planned > limits.maxEpisodesPerRun) {
        const message = `the run plans ${planned} episodes, over the maximum of ${limits.maxEpisodesPerRun} per run (AJET_MAX_EPISODES_PER_RUN); set maxSteps, fewer epochs or numRepeat, or split it into several runs`;
        throw new ApiError(400, "too many episodes", [{ path: "(body)", message }]);
      }
      const runId = `run-${new Date().toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${crypto.randomUUID().slice(0, 8)}`;
      const principal = c.get("auth").principal;
      const quota = c.env.RUN_QUOTA.get(c.env.RUN_QUOTA.idFromName(principal));
      const admitted = await quota.admit(runId, limits.maxRunsInFlight);
      if (!admitted.ok) {
        const message = `this token has ${admitted.inFlight} runs in flight, the maximum (AJET_MAX_RUNS_IN_FLIGHT = ${admitted.max}); stop one (POST /runs/:id/stop) or wait for one to finish`;
        throw new ApiError(429, "too many runs in flight", [{ path: "(token)", message }]);
      }
      try {
        const view = await stubOf(c.env, runId).create({ runId, spec, tasks, loadReports: reports, principal });
        return c.json(view, 201);
      } catch (err) {
        await quota.release(runId);
        throw err;
      }
    })
    .get("/:id", async (c) => {
      const id = c.req.param("id");
      return c.json(await orNotFound(id, () => stubOf(c.env, id).status()));
    })
    .post("/:id/stop", async (c) => {
      const id = c.req.param("id");
      return c.json(await orNotFound(id, () => stubOf(c.env, id).stop()));
    })
    .get("/:id/episodes", async (c) => {
      const id = c.req.param("id");
      const q = z
        .object({ step: z.coerce.number().int().min(0).optional(), limit: z.coerce.number().int().min(1).max(10_000).default(1000), offset: z.coerce.number().int().min(0).default(0) })
        .safeParse(c.req.query());
      if (!q.success) throw new ApiError(400, "invalid query", q.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })));
      const episodes = await orNotFound(id, () => stubOf(c.env, id).endedEpisodes({ globalStep: q.data.step, limit: q.data.limit, offset: q.data.offset }));
      return c.json({ episodes });
    })
    .get("/:id/report", async (c) => {
      const id = c.req.param("id");
      return c.json(await orNotFound(id, () => stubOf(c.env, id).report()));
    });
}
