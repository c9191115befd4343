/**
 * @module edge/api/runs-routes — the runs resource (issue 3 §4, issue 8 §2): `POST /runs` creates a run (the pipeline
 * is edge/api/create-run.ts); `GET /runs` lists runs newest first (paged: `?limit=N&cursor=…`); `GET /runs/:id` shows
 * its status; `POST /runs/:id/stop` drains it; `GET /runs/:id/report` gives the summary and, for eval runs, the eval
 * report; `GET /runs/:id/episodes[?step=N]` lists the episodes whose reward the server accepted (the audit ledger;
 * `step` is the server's `global_step`). Each query is parsed by its schema in edge/ground/api-contract.ts, which the CLI
 * reads too; every error is an issue whose code decides the status (edge/ground/errors).
 */
import { Hono } from "hono";
import type { z } from "zod";
import type { Env } from "../ground/env.ts";
import { ApiError, invalid, type Issue } from "../ground/errors.ts";
import type { RunListing } from "../run/run-views.ts";
import type { AppEnv } from "./app-env.ts";
import { EpisodesQuery, RunIdParam, RunsQuery } from "../ground/api-contract.ts";
import { createRun } from "./create-run.ts";
import { parseCursor, runIndexStub } from "./run-index.ts";

/** The run object of `runId`. @throws ApiError (`invalid`) for an id that names no run */
function stubOf(env: Env, runId: string) {
  if (!RunIdParam.safeParse(runId).success) throw new ApiError("invalid run id", [invalid("id", "a run id has letters, digits and _ . : - only")]);
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
}

/** The Durable Object answers null for a run it does not hold: `not_found`. */
async function orNotFound<T>(runId: string, call: () => Promise<T | null>): Promise<T> {
  const value = await call();
  if (value === null) throw new ApiError(`no run ${runId}`, [{ code: "not_found", path: "id", message: "no run with this id; create one with POST /runs" }]);
  return value;
}

/** A query parsed by its schema. @throws ApiError (`invalid`) naming each bad parameter */
function queryOf<T extends z.ZodType>(schema: T, query: Record<string, string>, hint = ""): z.output<T> {
  const q = schema.safeParse(query);
  if (!q.success) throw new ApiError("invalid query", q.error.issues.map((i): Issue => invalid(i.path.join("."), `${i.message}${hint}`)));
  return q.data;
}

/** The runs routes, bound to a registry of rollout functions. */
export function runsRoutes(functions: Parameters<typeof createRun>[1]["functions"]) {
  return new Hono<AppEnv>()
    .post("/", async (c) => {
      const body: unknown = await c.req.json().catch(() => {
        throw new ApiError("the body must be JSON", [invalid("(body)", "send a JSON run spec with content-type application/json")]);
      });
      const created = await createRun(body, { env: c.env, functions, principal: c.get("auth").principal, nowMs: Date.now() });
      if (!created.ok) throw new ApiError(created.title, created.issues);
      return c.json(created.view, 201);
    })
    .get("/", async (c) => {
      const q = queryOf(RunsQuery, c.req.query(), " (limit is 1..100)");
      const after = q.cursor === undefined ? null : parseCursor(q.cursor);
      if (q.cursor !== undefined && !after) throw new ApiError("invalid query", [invalid("cursor", "pass the `next` value of the previous page as cursor")]);
      const page = await runIndexStub(c.env).page({ limit: q.limit, after });
      const runs = await Promise.all(
        page.runs.map(async (r): Promise<RunListing> => {
          const live = await stubOf(c.env, r.runId).listing().catch(() => null);
          return live ?? { runId: r.runId, function: r.function, phase: "unknown", stopReason: null, engineStatus: null, globalStep: null, lastStepMeanReward: null, createdAtMs: r.createdAtMs, finishedAtMs: null, waitingFor: null, failure: null };
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
      const q = queryOf(EpisodesQuery, c.req.query());
      const episodes = await orNotFound(id, () => stubOf(c.env, id).endedEpisodes({ globalStep: q.step, limit: q.limit, offset: q.offset }));
      return c.json({ episodes });
    })
    .get("/:id/report", async (c) => {
      const id = c.req.param("id");
      return c.json(await orNotFound(id, () => stubOf(c.env, id).report()));
    });
}
