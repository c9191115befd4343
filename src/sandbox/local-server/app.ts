/**
 * @module sandbox/local-server/app — the local sandbox server's HTTP API (hono), every route behind
 * `Authorization: Bearer <token>` (no token, no access). Errors are JSON `{error: {code, message, retryable}}` with
 * a 4xx/5xx status; commands and code runs answer a stream of JSON lines (`application/x-ndjson`):
 * `{"t":"o","d":…}` stdout, `{"t":"e","d":…}` stderr, then one `{"t":"x", exitCode, timedOut, capped, durationMs,
 * result?, error?}`. A client that disconnects stops its command (the whole process group is killed).
 *
 * | route | answer |
 * |---|---|
 * | `GET /v1/health` | `{ok, instance, live}` |
 * | `GET /v1/sandboxes` | `{sandboxes: [{id, instanceType, createdAtMs, running}]}` — the live ones |
 * | `PUT /v1/sandboxes/:id` `{instanceType?, image?, env?, ttlSeconds?}` | 201 `{created: true}`, 200 `{created: false}` (it exists), 410 (destroyed before) |
 * | `DELETE /v1/sandboxes/:id` | 200 `{existed}` once nothing of it runs |
 * | `POST /v1/sandboxes/:id/exec` `{command, timeoutMs, maxOutputBytes, env?, cwd?}` | the line stream |
 * | `POST /v1/sandboxes/:id/code` `{language, code, timeoutMs, maxOutputBytes, env?}` | the line stream |
 * | `PUT /v1/sandboxes/:id/files?path=P` (raw body) · `GET …/files?path=P` · `GET …/list?path=P` | 204 · raw bytes · `{files}` |
 */
import { timingSafeEqual } from "node:crypto";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { MAX_OUTPUT_BYTES_LIMIT } from "../../port/sandbox.ts";
import { LocalSandboxError, MAX_FILE_BYTES, type LocalSandboxes, type OutputEvent, type RunOutcome } from "./sandboxes.ts";

const Env = z.record(z.string(), z.string()).optional();
const CreateBody = z.strictObject({
  instanceType: z.string().optional(),
  image: z.string().optional(),
  env: Env,
  ttlSeconds: z.number().positive().optional(),
});
const RunFields = {
  timeoutMs: z.number().int().positive().max(24 * 3600 * 1000),
  maxOutputBytes: z.number().int().min(1).max(MAX_OUTPUT_BYTES_LIMIT),
  env: Env,
};
const ExecBody = z.strictObject({ command: z.string().min(1), cwd: z.string().optional(), ...RunFields });
const CodeBody = z.strictObject({ language: z.enum(["python", "javascript"]), code: z.string(), ...RunFields });

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header?.startsWith("Bearer ") ? header.slice(7) : "");
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

function problem(c: Context, status: number, code: string, message: string, retryable = false): Response {
  return c.json({ error: { code, message, retryable } }, status as 400);
}

async function parseBody<T>(c: Context, schema: z.ZodType<T>): Promise<T | Response> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    return problem(c, 400, "bad_json", "the body must be JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    return problem(c, 400, "bad_request", `${i.path.join(".") || "(body)"}: ${i.message}`);
  }
  return parsed.data;
}

/** The sandbox error as its JSON answer; anything else is a 500 with its message (never a stack). */
function failure(c: Context, err: unknown): Response {
  if (err instanceof LocalSandboxError) return problem(c, err.status, err.code, err.message, err.retryable);
  return problem(c, 500, "internal", err instanceof Error ? err.message : String(err));
}

/**
 * Streams one run as JSON lines. Answers a plain JSON error when the run fails before its process started (no such
 * sandbox, bad cwd), so the status says it.
 */
async function streamRun(c: Context, run: (req: { signal: AbortSignal; onOutput(e: OutputEvent): void; onStart(): void }) => Promise<RunOutcome>): Promise<Response> {
  const controller = new AbortController();
  c.req.raw.signal?.addEventListener("abort", () => controller.abort(), { once: true });
  const encoder = new TextEncoder();
  const queue: Uint8Array[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  const push = (line: unknown) => {
    queue.push(encoder.encode(JSON.stringify(line) + "\n"));
    wake?.();
  };
  let onStarted!: () => void;
  const started = new Promise<void>((r) => (onStarted = r));
  const running = run({
    signal: controller.signal,
    onOutput: (e) => push({ t: e.stream === "stdout" ? "o" : "e", d: e.data }),
    onStart: () => onStarted(),
  });
  const first = await Promise.race([started.then(() => null), running.then(() => null, (err: unknown) => err)]);
  if (first !== null) return failure(c, first);
  running.then(
    (o) => {
      push({ t: "x", exitCode: o.exitCode, timedOut: o.timedOut, capped: o.capped, durationMs: o.durationMs, ...(o.code ? { result: o.code.result, error: o.code.error } : {}) });
      ended = true;
      wake?.();
    },
    (err: unknown) => {
      push({ t: "x", failed: err instanceof Error ? err.message : String(err) });
      ended = true;
      wake?.();
    },
  );
  const body = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      while (queue.length === 0 && !ended) await new Promise<void>((r) => (wake = r));
      wake = null;
      while (queue.length) ctl.enqueue(queue.shift()!);
      if (ended && queue.length === 0) ctl.close();
    },
    cancel() {
      controller.abort();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" } });
}

/** The API over one instance's sandboxes, for `token`. */
export function sandboxApp(sandboxes: LocalSandboxes, token: string): Hono {
  const app = new Hono();
  app.use("*", async (c, next) => {
    if (!tokenMatches(c.req.header("authorization"), token)) return problem(c, 401, "unauthenticated", "send Authorization: Bearer <the sandbox server's token>");
    await next();
  });
  app.onError((err, c) => failure(c, err));
  app.notFound((c) => problem(c, 404, "no_route", `no route ${c.req.method} ${new URL(c.req.url).pathname}`));

  app.get("/v1/health", (c) => c.json({ ok: true, instance: sandboxes.instance, live: sandboxes.list().length }));
  app.get("/v1/sandboxes", (c) => c.json({ sandboxes: sandboxes.list() }));
  app.put("/v1/sandboxes/:id", async (c) => {
    const body = await parseBody(c, CreateBody);
    if (body instanceof Response) return body;
    try {
      const { created } = await sandboxes.create(c.req.param("id"), { ...body, ...(body.env ? { env: body.env } : {}) } as Parameters<LocalSandboxes["create"]>[1]);
      return c.json({ created }, created ? 201 : 200);
    } catch (err) {
      return failure(c, err);
    }
  });
  app.delete("/v1/sandboxes/:id", async (c) => {
    try {
      return c.json(await sandboxes.destroy(c.req.param("id")));
    } catch (err) {
      return failure(c, err);
    }
  });
  app.post("/v1/sandboxes/:id/exec", async (c) => {
    const body = await parseBody(c, ExecBody);
    if (body instanceof Response) return body;
    const id = c.req.param("id");
    return streamRun(c, (r) =>
      sandboxes.exec(id, body.command, { timeoutMs: body.timeoutMs, maxOutputBytes: body.maxOutputBytes, ...(body.env ? { env: body.env } : {}), ...(body.cwd ? { cwd: body.cwd } : {}), ...r }),
    );
  });
  app.post("/v1/sandboxes/:id/code", async (c) => {
    const body = await parseBody(c, CodeBody);
    if (body instanceof Response) return body;
    const id = c.req.param("id");
    return streamRun(c, (r) => sandboxes.runCode(id, body.language, body.code, { timeoutMs: body.timeoutMs, maxOutputBytes: body.maxOutputBytes, ...(body.env ? { env: body.env } : {}), ...r }));
  });
  app.put("/v1/sandboxes/:id/files", async (c) => {
    const path = c.req.query("path");
    if (!path) return problem(c, 400, "bad_request", "path: give ?path=<file relative to the workdir>");
    const length = Number(c.req.header("content-length") ?? 0);
    if (length > MAX_FILE_BYTES) return problem(c, 413, "too_large", `a file of ${length} bytes is over the ${MAX_FILE_BYTES}-byte limit of one write`);
    try {
      await sandboxes.writeFile(c.req.param("id"), path, new Uint8Array(await c.req.arrayBuffer()));
      return c.body(null, 204);
    } catch (err) {
      return failure(c, err);
    }
  });
  app.get("/v1/sandboxes/:id/files", async (c) => {
    const path = c.req.query("path");
    if (!path) return problem(c, 400, "bad_request", "path: give ?path=<file relative to the workdir>");
    try {
      const bytes = await sandboxes.readFile(c.req.param("id"), path);
      return new Response(new Uint8Array(bytes), { headers: { "content-type": "application/octet-stream" } });
    } catch (err) {
      return failure(c, err);
    }
  });
  app.get("/v1/sandboxes/:id/list", async (c) => {
    try {
      return c.json({ files: await sandboxes.listFiles(c.req.param("id"), c.req.query("path") ?? ".") });
    } catch (err) {
      return failure(c, err);
    }
  });
  return app;
}
