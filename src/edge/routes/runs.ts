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
import type { Env } from "../env.ts";
import { ApiError, type Issue } from "../errors.ts";
import { parseRunRequest, type RunRequest } from "../run-request.ts";

function checkFunction(spec: RunSpec, functions: Readonly<Record<string, RolloutFunction>>): Issue[] {
  const fn = functions[spec.function];
  if (!fn) return [{ path: "function", message: `no rollout function "${spec.function}"; known: ${Object.keys(functions).join(", ")} (add one with \`ajet-edge new NAME\`)` }];
  const { missing } = bindSwarms(fn, spec.swarms);
  return missing.length ? [{ path: "swarms", message: `function "${fn.name}" needs swarms named ${swarmsOf(fn).join(", ")}; missing ${missing.join(", ")}` }] : [];
}

/** Loads every dataset (URL, inline rows or the generator). @throws ApiError 400 naming `datasets.N` */
async function loadDatasets(spec: RunRequest): Promise<{ tasks: Record<string, Task[]>; reports: Record<string, { accepted: number; rejected: number; namespace: string }> }> {
  const tasks: Record<string, Task[]> = {};
  const reports: Record<string, { accepted: number; rejected: number; namespace: string }> = {};
  const issues: Issue[] = [];
  for (const [i, d] of spec.datasets.entries()) {
    let loaded: LoadResult;
    try {
      loaded = await loadDataset(d);
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
  return new Hono<{ Bindings: Env }>()
    .post("/", async (c) => {
      const body: unknown = await c.req.json().catch(() => {
        throw new ApiError(400, "the body must be JSON", [{ path: "(body)", message: "send a JSON run spec with content-type application/json" }]);
      });
      // every problem at once (the spec's fields and each dataset's), then the function
      const parsed = parseRunRequest(body);
      const issues = parsed.success ? checkFunction(parsed.data, functions) : parsed.issues;
      if (!parsed.success || issues.length) throw new ApiError(400, "invalid run spec", issues);
      const spec = parsed.data;
      const { tasks, reports } = await loadDatasets(spec);
      // a train source with fewer tasks than one window takes from it would stall the run (never one task twice a window)
      const capacity = windowCapacityIssues(spec, Object.fromEntries(Object.entries(tasks).map(([name, t]) => [name, t.length])));
      if (capacity.length) throw new ApiError(400, "invalid datasets", capacity);
      const runId = `run-${new Date().toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${crypto.randomUUID().slice(0, 8)}`;
      const view = await stubOf(c.env, runId).create({ runId, spec, tasks, loadReports: reports });
      return c.json(view, 201);
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
