/**
 * @module sandbox/local-backend — the {@link SandboxBackend} over the local sandbox server's HTTP API
 * (sandbox/local-server/app). Platform-free (fetch only): the Worker in local workerd, the run's Durable Object and
 * Node tests use it alike. The token goes only to the server's URL.
 */
import type { CodeLanguage, FileEntry } from "./types.ts";
import { SandboxError } from "./types.ts";
import type { CodeOutcome, CodeRequest, CreateSpec, ExecOutcome, ExecRequest, SandboxBackend } from "./backend.ts";

/** Options of {@link localSandboxBackend}. */
export interface LocalBackendOptions {
  /** the server's base URL, e.g. `http://127.0.0.1:40123` */
  url: string;
  token: string;
  /** default the global fetch (the Worker passes its guarded fetch) */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** how long a create, destroy or file call may take, ms (default 30 000); runs get their timeout + 15 s */
  requestTimeoutMs?: number;
}

interface ErrorBody {
  error?: { code?: string; message?: string; retryable?: boolean };
}

/** Extra time a run's request gets over the run's own timeout (the server kills it at the timeout), ms. */
const RUN_SLACK_MS = 15_000;

/** The local sandbox server as a backend. */
export function localSandboxBackend(o: LocalBackendOptions): SandboxBackend {
  const base = o.url.replace(/\/+$/, "");
  const doFetch = o.fetch ?? ((input, init) => fetch(input, init));
  const requestTimeoutMs = o.requestTimeoutMs ?? 30_000;

  /** Sends one request; every failure to get an answer is an infrastructure error (retryable: nothing answered before a connect error). */
  const send = async (what: string, path: string, init: RequestInit & { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<Response> => {
    const timeout = AbortSignal.timeout(init.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${o.token}`);
    try {
      return await doFetch(`${base}${path}`, { ...init, headers, signal });
    } catch (err) {
      if (init.signal?.aborted) throw init.signal.reason ?? err;
      const timedOut = timeout.aborted;
      throw new SandboxError(
        "infrastructure",
        timedOut ? `sandbox backend: ${what} got no answer within ${init.timeoutMs / 1000} s` : `sandbox backend: ${what} failed: ${err instanceof Error ? err.message : String(err)}`,
        // a request that timed out may have been done; a refused connection was not
        { cause: err, retryable: !timedOut && isConnectError(err) },
      );
    }
  };

  /** Turns a non-2xx answer into the right error. */
  const refuse = async (what: string, res: Response): Promise<never> => {
    const body = (await res.json().catch(() => ({}))) as ErrorBody;
    const code = body.error?.code ?? `http_${res.status}`;
    const message = body.error?.message ?? `HTTP ${res.status}`;
    if (res.status === 401) throw new SandboxError("infrastructure", `sandbox backend: ${what} refused: the sandbox token is wrong (AJET_SANDBOX_TOKEN)`);
    if (code === "file_not_found") throw new SandboxError("not_found", message);
    if (code === "bad_instance_type" || code === "bad_image") throw new SandboxError("config", message);
    if (code === "bad_path" || code === "not_a_file" || code === "not_a_directory" || code === "too_large" || code === "no_interpreter") throw new SandboxError("config", message);
    throw new SandboxError("infrastructure", `sandbox backend: ${what}: ${message}`, { retryable: body.error?.retryable === true, code });
  };

  const json = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

  /** Runs a command or code: reads the line stream, calling `onOutput` as chunks come. */
  const run = async (what: string, path: string, body: Record<string, unknown>, req: ExecRequest | CodeRequest): Promise<CodeOutcome> => {
    const res = await send(what, path, { ...json(body), timeoutMs: req.timeoutMs + RUN_SLACK_MS, signal: req.signal });
    if (!res.ok) return refuse(what, res);
    let stdout = "";
    let stderr = "";
    let last: Record<string, unknown> | null = null;
    try {
      for await (const line of jsonLines(res.body!)) {
        const ev = line as { t: string; d?: string };
        if (ev.t === "o") {
          stdout += ev.d ?? "";
          req.onOutput?.("stdout", ev.d ?? "");
        } else if (ev.t === "e") {
          stderr += ev.d ?? "";
          req.onOutput?.("stderr", ev.d ?? "");
        } else if (ev.t === "x") last = line as Record<string, unknown>;
      }
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason ?? err;
      throw new SandboxError("infrastructure", `sandbox backend: ${what}: the answer stream broke: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    if (!last) throw new SandboxError("infrastructure", `sandbox backend: ${what}: the answer ended before the command did (the sandbox server stopped?)`);
    if (typeof last["failed"] === "string") throw new SandboxError("infrastructure", `sandbox backend: ${what}: ${last["failed"]}`);
    return {
      exitCode: typeof last["exitCode"] === "number" ? last["exitCode"] : null,
      stdout,
      stderr,
      timedOut: last["timedOut"] === true,
      capped: last["capped"] === true,
      durationMs: Number(last["durationMs"] ?? 0),
      result: typeof last["result"] === "string" ? last["result"] : null,
      error: (last["error"] as CodeOutcome["error"]) ?? null,
    };
  };

  const enc = (s: string) => encodeURIComponent(s);
  return {
    name: "local",
    async create(id: string, spec: CreateSpec, signal?: AbortSignal) {
      const res = await send("create", `/v1/sandboxes/${enc(id)}`, { ...json(spec), method: "PUT", timeoutMs: requestTimeoutMs, signal });
      if (!res.ok) return refuse("create", res);
      return (await res.json()) as { created: boolean };
    },
    async exec(id: string, req: ExecRequest): Promise<ExecOutcome> {
      const { result: _r, error: _e, ...outcome } = await run("command", `/v1/sandboxes/${enc(id)}/exec`, { command: req.command, timeoutMs: req.timeoutMs, maxOutputBytes: req.maxOutputBytes, ...(req.env ? { env: req.env } : {}), ...(req.cwd ? { cwd: req.cwd } : {}) }, req);
      return outcome;
    },
    runCode(id: string, req: CodeRequest): Promise<CodeOutcome> {
      const body: { language: CodeLanguage; code: string; timeoutMs: number; maxOutputBytes: number; env?: Record<string, string> } = { language: req.language, code: req.code, timeoutMs: req.timeoutMs, maxOutputBytes: req.maxOutputBytes };
      if (req.env) body.env = req.env;
      return run("code run", `/v1/sandboxes/${enc(id)}/code`, body, req);
    },
    async writeFile(id: string, path: string, content: string, signal?: AbortSignal) {
      const res = await send("file write", `/v1/sandboxes/${enc(id)}/files?path=${enc(path)}`, { method: "PUT", body: content, timeoutMs: requestTimeoutMs, signal });
      if (!res.ok) return refuse("file write", res);
      await res.body?.cancel();
    },
    async readFile(id: string, path: string, signal?: AbortSignal) {
      const res = await send("file read", `/v1/sandboxes/${enc(id)}/files?path=${enc(path)}`, { method: "GET", timeoutMs: requestTimeoutMs, signal });
      if (!res.ok) return refuse("file read", res);
      return res.text();
    },
    async listFiles(id: string, path: string, signal?: AbortSignal): Promise<FileEntry[]> {
      const res = await send("file list", `/v1/sandboxes/${enc(id)}/list?path=${enc(path)}`, { method: "GET", timeoutMs: requestTimeoutMs, signal });
      if (!res.ok) return refuse("file list", res);
      return ((await res.json()) as { files: FileEntry[] }).files;
    },
    async destroy(id: string, signal?: AbortSignal) {
      const res = await send("destroy", `/v1/sandboxes/${enc(id)}`, { method: "DELETE", timeoutMs: requestTimeoutMs, signal });
      if (!res.ok) return refuse("destroy", res);
      return (await res.json()) as { existed: boolean };
    },
  };
}

/** The live sandboxes of a local server (`GET /v1/sandboxes`), for tests, the benchmark and `status`. */
export async function listLocalSandboxes(o: Pick<LocalBackendOptions, "url" | "token" | "fetch">): Promise<Array<{ id: string; createdAtMs: number; running: number }>> {
  const doFetch = o.fetch ?? ((input, init) => fetch(input, init));
  const res = await doFetch(`${o.url.replace(/\/+$/, "")}/v1/sandboxes`, { headers: { authorization: `Bearer ${o.token}` } });
  if (!res.ok) throw new Error(`sandbox server answered ${res.status} to GET /v1/sandboxes`);
  return ((await res.json()) as { sandboxes: Array<{ id: string; createdAtMs: number; running: number }> }).sandboxes;
}

/** The JSON values of a stream of lines. */
async function* jsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buf = "";
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (value) buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) yield JSON.parse(line);
    }
    if (done) break;
  }
  if (buf.trim()) yield JSON.parse(buf);
}

/** A connection that was never made (nothing reached the server): refused, reset before sending, no route. */
function isConnectError(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: string }).code;
    if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EHOSTUNREACH" || code === "ENETUNREACH") return true;
    const msg = e instanceof Error ? e.message : "";
    if (/ECONNREFUSED|connection refused/i.test(msg)) return true;
  }
  return false;
}
