/**
 * @module edge/api/runs-routes — the runs resource (issue 3 §4, issue 8 §2): `POST /runs` validates a run spec (errors
 * name the field path; the job too), loads its datasets, registers the run in the RunIndex and creates the run's
 * Durable Object — which, through its swarm servers' objects, syncs the job and starts OFFLINE engines; `GET /runs`
 * lists runs newest first (paged: `?limit=N&cursor=…`); `GET /runs/:id` shows its status;
 * `POST /runs/:id/stop` drains it; `GET /runs/:id/report` gives the summary and, for eval runs, the eval report;
 * `GET /runs/:id/episodes[?step=N]` lists the episodes whose reward the server accepted (the audit ledger).
 */
import { Hono } from "hono";
import { z } from "zod";
import { bindSwarms, swarmsOf, type RolloutFunction } from "../../sdk/contract.ts";
import type { RunSpec } from "../../scheduler/index.ts";
import { DEFAULT_SPLIT, datasetNamespace, formatOf, tasksFromObjects, withAnswerReaders, type ParsedDatasetSpec } from "../../tasks/index.ts";
import { DATASET_LIMIT_VARS, datasetLimits, type DatasetLimits } from "../ground/dataset-limits.ts";
import type { CreateRunResult, SourcePlan } from "../run/run-views.ts";
import type { Task } from "../../protocol/index.ts";
import { checkUrl, outboundPolicy, type OutboundPolicy } from "../../runtime/outbound.ts";
import type { AppEnv } from "./app-env.ts";
import type { Env } from "../ground/env.ts";
import { ApiError, type Issue } from "../ground/errors.ts";
import { limitsFrom, type ApiLimits } from "../ground/limits-config.ts";
import { parseRunRequest, type RunRequest } from "./run-request.ts";
import { parseOperatorSecrets, runSecretsIssues } from "../ground/secrets.ts";
import type { RunListing } from "../run/run-views.ts";
import { parseCursor, runIndexStub } from "./run-index.ts";
import { runJob, withJobDefaults } from "../ground/run-job.ts";

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
    // r2://BUCKET/KEY is read through the Worker's own R2 binding (AJET_DATASET_BUCKETS), not over the network
    const refused = d.url !== undefined && !d.url.startsWith("r2://") ? checkUrl(d.url, policy.allowed) : null;
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

/** Serialised tasks per `stageTasks` call (an RPC carries at most 32 MiB; a bounded chunk keeps both sides small). */
const STAGE_CHUNK_BYTES = 1024 * 1024;
const STAGE_CHUNK_TASKS = 2000;

type LoadReports = Record<string, { accepted: number; rejected: number; namespace: string }>;

/**
 * The inline-row limits of a request (rows and bytes over all datasets → 413), each issue naming the limit and the
 * alternative. Cheap: runs before any row is mapped.
 */
function limitIssues(readers: readonly ParsedDatasetSpec[], limits: DatasetLimits): { tooLarge: Issue[]; invalid: Issue[] } {
  const tooLarge: Issue[] = [];
  const invalid: Issue[] = [];
  let rows = 0;
  let bytes = 0;
  const encoder = new TextEncoder();
  for (const [i, r] of readers.entries()) {
    if (!r?.tasks) continue;
    rows += r.tasks.length;
    if (rows > limits.maxInlineRows) {
      tooLarge.push({
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
      tooLarge.push({
        path: `datasets.${i}.tasks`,
        message: `inline tasks: over ${limits.maxInlineBytes} bytes of rows, this Worker's limit (${DATASET_LIMIT_VARS.maxInlineBytes}); use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row`,
      });
    }
  }
  return { tooLarge, invalid };
}

/**
 * How the Durable Object reads each dataset. Inline rows are mapped here (their refusals reported by line) and
 * staged in the object in bounded chunks; a URL becomes a `file` plan the object indexes itself; a generator a
 * `generate` plan (tasks made when first needed).
 * @throws ApiError 413 for inline rows over the limits, 400 naming `datasets.N` for anything else
 */
async function planDatasets(
  spec: RunSpec,
  readers: readonly ParsedDatasetSpec[],
  limits: DatasetLimits,
  stage: (source: string, start: number, tasks: Task[]) => Promise<void>,
): Promise<{ sources: Record<string, SourcePlan>; reports: LoadReports }> {
  const { tooLarge, invalid } = limitIssues(readers, limits);
  if (tooLarge.length) throw new ApiError(413, "inline tasks too large", tooLarge);
  if (invalid.length) throw new ApiError(400, "invalid datasets", invalid);
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
        issues.push({ path: `datasets.${i}`, message: `dataset "${d.name}" has no usable task${why ? ` (${why})` : ""}` });
        continue;
      }
      inline.push({ name: d.name, tasks: loaded.tasks.map((t) => withAnswerReaders(t, r.answerReaders)) });
      sources[d.name] = { type: "stored", count: loaded.tasks.length };
      reports[d.name] = { accepted: loaded.report.accepted, rejected: loaded.report.rejected.length, namespace: datasetNamespace(r) };
    }
  }
  if (issues.length) throw new ApiError(400, "invalid datasets", issues);
  for (const { name, tasks } of inline) {
    let start = 0;
    while (start < tasks.length) {
      let end = start;
      let bytes = 0;
      while (end < tasks.length && end - start < STAGE_CHUNK_TASKS && (end === start || bytes < STAGE_CHUNK_BYTES)) {
        bytes += JSON.stringify(tasks[end]).length;
        end += 1;
      }
      await stage(name, start, tasks.slice(start, end));
      start = end;
    }
  }
  return { sources, reports };
}

/** The spec as stored: the datasets without their inline rows (they are stored one row per task, BC-53). */
function withoutRows(spec: RunRequest): RunRequest {
  return { ...spec, datasets: spec.datasets.map(({ tasks: _rows, ...rest }) => rest) };
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
      // every problem at once (the job, the spec's fields and each dataset's), then the function, the hosts and the secrets
      const job = withJobDefaults(body);
      const parsed = parseRunRequest(job.body);
      const issues = [
        ...job.issues,
        ...(parsed.success
          ? [
              ...checkFunction(parsed.data, functions),
              ...hostIssues(parsed.data, policy),
              ...runSecretsIssues({ runSecrets: parsed.data.secrets, operatorSecrets: operator, swarms: parsed.data.swarms, allowed: policy.allowed }),
            ]
          : parsed.issues),
      ];
      if (!parsed.success || issues.length) throw new ApiError(400, "invalid run spec", issues);
      const spec = parsed.data;
      const tooMany = generateIssues(spec, limits);
      if (tooMany.length) throw new ApiError(413, "too many generated tasks", tooMany);
      let jobYaml: string;
      try {
        jobYaml = runJob(spec).toYaml();
      } catch (err) {
        throw new ApiError(400, "invalid run spec", [{ path: "job", message: err instanceof Error ? err.message : String(err) }]);
      }
      const now = Date.now();
      const runId = `run-${new Date(now).toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${crypto.randomUUID().slice(0, 8)}`;
      const principal = c.get("auth").principal;
      const quota = c.env.RUN_QUOTA.get(c.env.RUN_QUOTA.idFromName(principal));
      const admitted = await quota.admit(runId, limits.maxRunsInFlight);
      if (!admitted.ok) {
        const message = `this token has ${admitted.inFlight} runs in flight, the maximum (AJET_MAX_RUNS_IN_FLIGHT = ${admitted.max}); stop one (POST /runs/:id/stop) or wait for one to finish`;
        throw new ApiError(429, "too many runs in flight", [{ path: "(token)", message }]);
      }
      try {
        const stub = stubOf(c.env, runId);
        const { sources, reports } = await planDatasets(spec, spec.datasets, datasetLimits(c.env as unknown as Record<string, unknown>), (source, start, tasks) =>
          stub.stageTasks({ runId, source, start, tasks, scope: spec.taskIdScope ?? "run" }),
        );
        // the object reads URL datasets itself (index pass), then checks every dataset has tasks, the windows fit
        // and the planned episodes (the RPC typing maps the view's `unknown` log fields to never)
        const created = (await stub.create({ runId, spec: withoutRows(spec), sources, loadReports: reports, principal, jobYaml, maxEpisodesPerRun: limits.maxEpisodesPerRun })) as unknown as CreateRunResult;
        if (!created.view) {
          const episodes = created.issues.some((i) => i.message.includes("AJET_MAX_EPISODES_PER_RUN"));
          throw new ApiError(400, episodes ? "too many episodes" : "invalid datasets", created.issues);
        }
        await runIndexStub(c.env).add({ runId, function: spec.function, createdAtMs: now });
        return c.json(created.view, 201);
      } catch (err) {
        await quota.release(runId);
        throw err;
      }
    })
    .get("/", async (c) => {
      const q = z
        .object({ limit: z.coerce.number().int().min(1).max(100).default(20), cursor: z.string().optional() })
        .safeParse(c.req.query());
      if (!q.success) throw new ApiError(400, "invalid query", q.error.issues.map((i) => ({ path: i.path.join("."), message: `${i.message} (limit is 1..100)` })));
      const after = q.data.cursor === undefined ? null : parseCursor(q.data.cursor);
      if (q.data.cursor !== undefined && !after) throw new ApiError(400, "invalid query", [{ path: "cursor", message: "pass the `next` value of the previous page as cursor" }]);
      const page = await runIndexStub(c.env).page({ limit: q.data.limit, after });
      const runs = await Promise.all(
        page.runs.map(async (r): Promise<RunListing> => {
          const live = await stubOf(c.env, r.runId).listing().catch(() => null);
          return live ?? { runId: r.runId, function: r.function, phase: "unknown", stopReason: null, engineStatus: null, globalStep: null, lastStepMeanReward: null, createdAtMs: r.createdAtMs, waitingFor: null, failure: null };
        }),
      );
      return c.json({ runs, next: page.next });
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
