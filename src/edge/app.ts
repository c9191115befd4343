/**
 * @module edge/app — the Worker's HTTP API (hono, issue 3 §4). Every error is JSON and names the field path.
 */
import { Hono } from "hono";
import type { RolloutFunction } from "../sdk/contract.ts";
import type { Env } from "./env.ts";
import { ApiError } from "./errors.ts";
import { jsonLogger } from "./log.ts";
import { runsRoutes } from "./routes/runs.ts";

/** Builds the app over a registry of rollout functions (the Worker passes `functions/index.ts`). */
export function createApp(functions: Readonly<Record<string, RolloutFunction>>) {
  const app = new Hono<{ Bindings: Env }>()
    .get("/health", (c) => c.json({ status: "ok", functions: Object.keys(functions) }))
    .route("/runs", runsRoutes(functions));
  app.notFound((c) => c.json(new ApiError(404, `no route ${c.req.method} ${new URL(c.req.url).pathname}`, []).toJSON(), 404));
  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json(err.toJSON(), err.status);
    jsonLogger().error("unhandled error", { error: String(err), stack: err instanceof Error ? err.stack : undefined });
    return c.json({ error: { message: err instanceof Error ? err.message : String(err), issues: [] } }, 500);
  });
  return app;
}

/** The app's type, for a typed client (`hc<AppType>`). */
export type AppType = ReturnType<typeof createApp>;
