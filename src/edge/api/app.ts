/**
 * @module edge/api/app — the Worker's HTTP API (hono, issue 3 §4). Every error is JSON and names the field path.
 * Every route but `GET /health` needs a token (edge/api/auth.ts, checked before the body is read); request bodies are
 * capped (`AJET_MAX_BODY_BYTES`, 413). An unexpected error answers a generic 500 (details only in the log).
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie } from "hono/cookie";
import type { RolloutFunction } from "../../sdk/contract.ts";
import type { AppEnv } from "./app-env.ts";
import { authorize, authorizeCredential } from "./auth.ts";
import { AUTH_LOCK_SECONDS, clientKey, countFailure, isLocked, THROTTLED_MESSAGE } from "./auth-throttle.ts";
import { ApiError } from "../ground/errors.ts";
import { limitsFrom } from "../ground/limits-config.ts";
import { jsonLogger } from "../ground/log.ts";
import { runsRoutes } from "./runs-routes.ts";

export type { AppEnv, AppVariables } from "./app-env.ts";
import { dashboardPublicRoutes, dashboardRoutes, isPageRequest, SESSION_COOKIE } from "../dashboard/routes.ts";

/** Builds the app over a registry of rollout functions (the Worker passes `functions/index.ts`). */
export function createApp(functions: Readonly<Record<string, RolloutFunction>>) {
  const app = new Hono<AppEnv>()
    // health says only that the Worker answers (and whether it is configured): no function list, no version
    .get("/health", async (c) => {
      const configured = (c.env.AJET_API_TOKEN ?? "") !== "";
      return configured ? c.json({ status: "ok" }) : c.json({ status: "unconfigured" }, 503);
    })
    // the sign-in form and the bundled scripts and styles hold no run data: no token needed
    .route("/", dashboardPublicRoutes((token, env) => authorizeCredential({ token, source: "token" }, "GET", env)))
    .use("*", async (c, next) => {
      // an address over its failed sign-ins is refused before its credential is checked (edge/api/auth-throttle)
      const client = clientKey(c.req.raw);
      const throttled = () => {
        const refused = new ApiError(THROTTLED_MESSAGE, [{ code: "too_many_failures", path: "authorization", message: THROTTLED_MESSAGE }]);
        const res = c.json(refused.toJSON(), refused.status);
        res.headers.set("retry-after", String(AUTH_LOCK_SECONDS));
        return res;
      };
      const presented = c.req.header("authorization") !== undefined || getCookie(c, SESSION_COOKIE) !== undefined;
      if (client !== null && presented && (await isLocked(client))) return throttled();
      const decision = await authorize(c.req.raw, c.env, getCookie(c, SESSION_COOKIE));
      if (client !== null && !decision.ok && decision.wrongToken && (await countFailure(c.env.AUTH_FAILURES, client))) return throttled();
      if (!decision.ok) {
        // a browser without a session is sent to the sign-in form (never a token in the URL)
        if (decision.code === "unauthenticated" && isPageRequest(c.req.raw)) return c.redirect(`/login?next=${encodeURIComponent(new URL(c.req.url).pathname)}`, 303);
        const refused = new ApiError(decision.message, [{ code: decision.code, path: decision.header, message: decision.message }]);
        const res = c.json(refused.toJSON(), refused.status);
        if (decision.code === "unauthenticated") res.headers.set("www-authenticate", 'Bearer realm="ajet-edge"');
        return res;
      }
      c.set("auth", decision);
      return next();
    })
    .use("*", (c, next) => {
      const { maxBodyBytes } = limitsFrom(c.env);
      return bodyLimit({
        maxSize: maxBodyBytes,
        onError: (c) => {
          const message = `the request body is larger than ${maxBodyBytes} bytes (AJET_MAX_BODY_BYTES); give large datasets as a dataset URL instead of inline tasks`;
          return c.json(new ApiError(message, [{ code: "too_large", path: "(body)", message }]).toJSON(), 413);
        },
      })(c, next);
    })
    // the dashboard first: it answers `GET /runs/:id` only for a browser (Accept: text/html) and passes the rest on
    .route("/", dashboardRoutes())
    .route("/runs", runsRoutes(functions));
  app.notFound((c) => {
    const message = `no route ${c.req.method} ${new URL(c.req.url).pathname}`;
    return c.json(new ApiError(message, [{ code: "not_found", path: "(route)", message: "see the README's API table for the routes" }]).toJSON(), 404);
  });
  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json(err.toJSON(), err.status);
    const id = crypto.randomUUID().slice(0, 8);
    jsonLogger().error("unhandled error", { errorId: id, error: String(err), stack: err instanceof Error ? err.stack : undefined });
    return c.json({ error: { message: `internal error ${id}; the Worker's log has the details`, issues: [] } }, 500);
  });
  return app;
}
