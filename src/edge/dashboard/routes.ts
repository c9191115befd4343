/**
 * @module edge/dashboard/routes — the dashboard's pages and data routes (issue 12): `GET /` (the runs), `GET
 * /runs/:id` asked for by a browser (`Accept: text/html`: the run page; any other Accept gets the JSON API),
 * `GET /login` + `POST /login` (the sign-in form that sets the session cookie), `GET /assets/:file`, and the data
 * routes `GET /runs/:id/metrics[?format=csv|jsonl]`, `/dashboard`, `/attempts[?window=N]` (the run's 1-based window), `/episodes/:key[?attempt=N]`
 * and `/live` (WebSocket). Mounted before the runs API, behind the app's global auth.
 */
import { Hono, type Context } from "hono";
import { setCookie } from "hono/cookie";
import type { z } from "zod";
import { bodyLimit } from "hono/body-limit";
import type { Env } from "../ground/env.ts";
import { AttemptsQuery, MetricsQuery, RunIdParam, TranscriptQuery } from "../ground/api-contract.ts";
import { ApiError, invalid, type Issue, type IssueCode } from "../ground/errors.ts";
import { readTranscript, transcriptSettings } from "../ground/transcripts.ts";
import { ASSETS } from "./assets.ts";
import { loginPage, runPage, runsPage } from "./pages.ts";

/** The dashboard's session cookie: it holds the token a browser signed in with (HttpOnly, Secure, SameSite=Strict). */
export const SESSION_COOKIE = "ajet_session";

/**
 * Whether a pasted token may read the API (the app passes its auth check, api/auth `authorizeCredential` for a GET):
 * ok, or why not (`unconfigured` when the Worker has no token) and the message.
 */
export type TokenCheck = (token: string, env: Env) => Promise<{ ok: true } | { ok: false; code: IssueCode; message: string }>;

/** How long a sign-in lasts (seconds). */
export const SESSION_MAX_AGE_SECONDS = 7 * 86_400;

function checkRunId(runId: string): void {
  if (!RunIdParam.safeParse(runId).success) throw new ApiError("invalid run id", [invalid("id", "a run id has letters, digits and _ . : - only")]);
}

function stubOf(env: Env, runId: string) {
  checkRunId(runId);
  return env.SCHEDULER.get(env.SCHEDULER.idFromName(runId));
}

function notFound(runId: string): never {
  throw new ApiError(`no run ${runId}`, [{ code: "not_found", path: "id", message: "no run with this id; create one with POST /runs" }]);
}

const wantsHtml = (c: Context) => (c.req.header("accept") ?? "").includes("text/html");

function queryOf<T extends z.ZodType>(schema: T, c: Context): z.infer<T> {
  const q = schema.safeParse(c.req.query());
  if (!q.success) throw new ApiError("invalid query", q.error.issues.map((i): Issue => invalid(i.path.join("."), i.message)));
  return q.data;
}

/** True for a browser asking for a dashboard page (`GET /` or `GET /runs/:id` with `Accept: text/html`). */
export function isPageRequest(request: Request): boolean {
  if (request.method !== "GET" || !(request.headers.get("accept") ?? "").includes("text/html")) return false;
  const path = new URL(request.url).pathname;
  return path === "/" || /^\/runs\/[A-Za-z0-9_.:-]{1,128}$/.test(path);
}

/**
 * The routes without run data, reachable without a token: the sign-in form and the bundled assets.
 * @param checkToken decides whether a pasted token becomes a session
 */
export function dashboardPublicRoutes(checkToken: TokenCheck) {
  return new Hono<{ Bindings: Env }>()
    .get("/login", (c) => c.html(loginPage(c.req.query("next"))))
    .post("/login", bodyLimit({ maxSize: 4096, onError: (c) => c.html(loginPage(undefined, "the form is too large"), 413) }), async (c) => {
      const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
      const token = typeof form["token"] === "string" ? form["token"].trim() : "";
      const next = typeof form["next"] === "string" && /^\/[A-Za-z0-9_.:/-]*$/.test(form["next"]) ? form["next"] : "/";
      // only a token the API would accept for reading becomes a session
      const decision = token === "" ? null : await checkToken(token, c.env);
      if (!decision?.ok) {
        const unconfigured = decision !== null && decision.code === "unconfigured";
        const why = decision === null ? "paste AJET_READ_TOKEN (or AJET_API_TOKEN) into the form" : unconfigured ? decision.message : "that token matches neither AJET_API_TOKEN nor AJET_READ_TOKEN";
        return c.html(loginPage(next, why), unconfigured ? 503 : 401);
      }
      setCookie(c, SESSION_COOKIE, token, { httpOnly: true, secure: true, sameSite: "Strict", path: "/", maxAge: SESSION_MAX_AGE_SECONDS });
      return c.redirect(next, 303);
    })
    .get("/assets/:file", (c) => {
      const asset = ASSETS[c.req.param("file")];
      if (!asset) throw new ApiError(`no asset ${c.req.param("file")}`, [{ code: "not_found", path: "file", message: `known: ${Object.keys(ASSETS).join(", ")}` }]);
      return c.body(asset.body, 200, { "content-type": asset.contentType, "cache-control": "public, max-age=300" });
    });
}

/** The dashboard's pages and data routes (behind the app's auth). */
export function dashboardRoutes() {
  return new Hono<{ Bindings: Env }>()
    // the runs page for a browser; an API client asking for `/` (or `/runs/..`, which URLs normalise to `/`) gets the 404
    .get("/", (c, next) => (wantsHtml(c) ? c.html(runsPage()) : next()))
    .get("/runs/:id", async (c, next) => {
      if (!wantsHtml(c)) return next();
      const id = c.req.param("id");
      if (!RunIdParam.safeParse(id).success) return next();
      return c.html(runPage(id));
    })
    .get("/runs/:id/metrics", async (c) => {
      const id = c.req.param("id");
      const { format } = queryOf(MetricsQuery, c);
      const csv = format === "csv" || (format === undefined && (c.req.header("accept") ?? "").includes("text/csv"));
      const stub = stubOf(c.env, id);
      if (format === "jsonl") {
        const text = await stub.metricsJsonl();
        if (text === null) notFound(id);
        return c.body(text, 200, { "content-type": "application/jsonl; charset=utf-8" });
      }
      if (csv) {
        const text = await stub.metricsCsv();
        if (text === null) notFound(id);
        return c.body(text, 200, { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${id}-metrics.csv"` });
      }
      const metrics = await stub.metrics();
      return metrics === null ? notFound(id) : c.json(metrics);
    })
    .get("/runs/:id/dashboard", async (c) => {
      const id = c.req.param("id");
      const snap = await stubOf(c.env, id).dashboard();
      return snap === null ? notFound(id) : c.json(snap);
    })
    .get("/runs/:id/attempts", async (c) => {
      const id = c.req.param("id");
      const q = queryOf(AttemptsQuery, c);
      const rows = await stubOf(c.env, id).attempts({ windowIndex: q.window === undefined ? undefined : q.window - 1, limit: q.limit });
      return rows === null ? notFound(id) : c.json({ attempts: rows });
    })
    .get("/runs/:id/episodes/:key", async (c) => {
      const id = c.req.param("id");
      const key = c.req.param("key");
      const q = queryOf(TranscriptQuery, c);
      checkRunId(id);
      if (key.length === 0 || key.length > 512) throw new ApiError("invalid episode key", [invalid("key", "an episode key looks like source/epoch/taskIndex#repeat, URL-encoded")]);
      const found = await readTranscript(c.env, id, key, q.attempt);
      if ("text" in found) return c.body(found.text, 200, { "content-type": "application/json; charset=utf-8" });
      if (found.kind === "disabled") throw new ApiError("transcripts are off", [{ code: "not_found", path: "TRANSCRIPTS", message: "the Worker has no TRANSCRIPTS R2 binding; add [[r2_buckets]] binding = \"TRANSCRIPTS\" to wrangler.toml" }]);
      if (found.kind === "expired") {
        const days = transcriptSettings(c.env).retentionMs / 86_400_000;
        throw new ApiError(`transcript of ${key} expired`, [{ code: "not_found", path: "key", message: `transcripts are kept ${days} days (TRANSCRIPT_RETENTION_DAYS); this one expired at ${new Date(found.expiredAtMs).toISOString()}` }]);
      }
      throw new ApiError(`no transcript of episode ${key}${q.attempt ? ` attempt ${q.attempt}` : ""} in run ${id}`, [{ code: "not_found", path: "key", message: "episodes get a transcript once their attempt is reported; list them with GET /runs/:id/attempts" }]);
    })
    .get("/runs/:id/live", async (c) => {
      const id = c.req.param("id");
      if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new ApiError("expected a WebSocket upgrade", [invalid("upgrade", "connect with a WebSocket client (the run page does)")]);
      return stubOf(c.env, id).fetch(c.req.raw);
    });
}
