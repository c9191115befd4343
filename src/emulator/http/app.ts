/**
 * @module emulator/http/app — the emulator's hono app: every client-facing, engine-facing and proxy route of
 * the real swarm server, with FastAPI's 404 / 405 answers for anything else and Starlette's plain-text 500 for
 * an unexpected error. `app.fetch(request)` serves without a socket.
 */
import { Hono } from "hono";
import type { AppDeps, RouteTable } from "./deps.ts";
import { httpException, internalServerError } from "./fastapi.ts";
import { registerControlRoutes } from "./routes-control.ts";
import { registerEpisodeRoutes } from "./routes-episodes.ts";

/** Builds the app over the shared dependencies. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const table: RouteTable = new Map();
  const required = Object.entries(deps.requireHeaders ?? {});
  if (required.length) {
    // a simulated access gateway in front of the whole server (swarm API and LLM proxy alike)
    app.use("*", async (c, next) => {
      const bad = required.find(([name, value]) => c.req.header(name) !== value);
      if (!bad) return next();
      const detail = c.req.header(bad[0]) === undefined ? `gateway: missing header ${bad[0]}` : `gateway: wrong value of header ${bad[0]}`;
      return new Response(JSON.stringify({ detail }), { status: 401, headers: { "content-type": "application/json" } });
    });
  }
  registerControlRoutes(app, table, deps);
  registerEpisodeRoutes(app, table, deps);
  app.notFound((c) => {
    const path = c.req.path;
    const methods = table.get(path);
    if (!methods && path.length > 1 && path.endsWith("/") && table.has(path.slice(0, -1))) {
      // Starlette's redirect_slashes: `/health/` → 307 to `/health`.
      const target = new URL(c.req.url);
      target.pathname = path.slice(0, -1);
      return new Response(null, { status: 307, headers: { location: target.toString() } });
    }
    if (!methods) return httpException(404, "Not Found");
    const res = httpException(405, "Method Not Allowed");
    res.headers.set("allow", [...methods].join(", "));
    return res;
  });
  app.onError((err) => {
    console.error("[ajet-edge emulator] unexpected error:", err);
    return internalServerError();
  });
  return app;
}
