/**
 * @module sandbox/cloudflare-backend — the {@link SandboxBackend} over Cloudflare's Sandbox SDK
 * (`@cloudflare/sandbox`, pinned 0.12.10: the 0.x line, the one on npm; ../shared/spec/sandbox-notes.md §1). One
 * sandbox = one Durable Object of the Sandbox class, reached with the SDK's `getSandbox(namespace, id, options)`
 * (passed in: this module imports only the SDK's types, so a Worker without containers bundles nothing of it).
 *
 * - Transport `rpc`: the Sandbox object talks to its container over one capnweb WebSocket for the sandbox's whole
 *   life, instead of one HTTP subrequest per call. From the episode's invocation each call is one Durable Object
 *   RPC, charged to its subrequest budget through `take` (the safe bound: the Workers docs count DO calls as
 *   subrequests); DO RPC holds none of the 6 outbound connections.
 * - Instance type and image are per container class in wrangler.toml (a `containers` entry each), so `bindings`
 *   maps `"<instanceType>"` or `"<instanceType>/<image>"` to the Durable Object namespace of such a class; a
 *   sandbox asking for one that is not bound gets one clear line naming the fix.
 * - Paths are relative to `/workspace` (the SDK's default dir); commands run under coreutils `timeout` so a
 *   command and its process group are killed at the timeout (exit 124 = timed out); code runs use a fresh code
 *   context each (created, used, deleted), so the interpreter starts clean as on the local backend.
 * - `keepAlive: false` and `sleepAfter` = the attempt's lifetime (at most 10 min): a sandbox the run's sweep
 *   could not destroy still stops on its own once idle (the platform's backstop under the ledger).
 * What could not be run here (no Docker, no image pulls): a real container. The tests drive the real `getSandbox`
 * over a fake of the Sandbox object's RPC surface (test/edge/sandbox-cloudflare.test.ts).
 */
import type { ExecOptions, ExecResult, ExecutionResult, ISandbox, SandboxOptions as CfSandboxOptions } from "@cloudflare/sandbox";
import { INSTANCE_TYPE_NAMES, type InstanceType } from "../port/sandbox.ts";
import type { CodeOutcome, CodeRequest, CreateSpec, ExecOutcome, ExecRequest, SandboxBackend } from "./backend.ts";
import { SandboxError, type FileEntry } from "./types.ts";

/** The part of the SDK's sandbox stub this backend calls (`getSandbox`'s result satisfies it). */
export type CloudflareSandboxStub = Pick<ISandbox, "exec" | "writeFile" | "readFile" | "listFiles" | "mkdir" | "setEnvVars" | "createCodeContext" | "runCode" | "deleteCodeContext"> & {
  destroy(): Promise<void>;
};

/** The SDK's `getSandbox`, as this backend calls it. */
export type GetSandbox<NS> = (ns: NS, id: string, options: CfSandboxOptions) => CloudflareSandboxStub;

/** Options of {@link cloudflareSandboxBackend}. */
export interface CloudflareBackendOptions<NS> {
  /** `getSandbox` from `@cloudflare/sandbox` */
  getSandbox: GetSandbox<NS>;
  /** container classes by `"<instanceType>"` or `"<instanceType>/<image>"`: the Durable Object namespace of each */
  bindings: Readonly<Record<string, NS>>;
  /** charges one subrequest of the invocation's budget per call (throws when it is spent) */
  take?(purpose: string): void;
}

/** The SDK's workdir; sandbox paths are relative to it. */
export const CLOUDFLARE_WORKDIR = "/workspace";
/** Longest idle time before a container the sweep could not destroy stops on its own, seconds. */
export const CLOUDFLARE_MAX_SLEEP_AFTER_SECONDS = 600;

/** A POSIX single-quoted shell word. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The SDK's error as ours: no file → `not_found`; a container not admitted (retryable) → infrastructure, retryable. */
function mapError(what: string, err: unknown): SandboxError {
  if (err instanceof SandboxError) return err;
  const e = err as { code?: string; name?: string; message?: string; context?: { retryable?: boolean } };
  const message = `cloudflare sandbox: ${what}: ${e?.message ?? String(err)}`;
  if (e?.code === "FILE_NOT_FOUND") return new SandboxError("not_found", message, { cause: err });
  const retryable = e?.code === "CONTAINER_UNAVAILABLE" || e?.name === "ContainerUnavailableError" || e?.context?.retryable === true;
  return new SandboxError("infrastructure", message, { cause: err, retryable, ...(e?.code ? { code: e.code } : {}) });
}

/** The Sandbox SDK as a backend. */
export function cloudflareSandboxBackend<NS>(o: CloudflareBackendOptions<NS>): SandboxBackend {
  /** per sandbox: the stub (built once: getSandbox itself sends the sandbox's configuration) */
  const stubs = new Map<string, CloudflareSandboxStub>();
  const bindingFor = (instanceType: InstanceType, image: string): NS => {
    const key = image === "default" ? instanceType : `${instanceType}/${image}`;
    const ns = o.bindings[key];
    if (ns === undefined) {
      const bound = Object.keys(o.bindings);
      throw new SandboxError(
        "config",
        `ctx.sandbox(): no container class is bound for ${image === "default" ? `instanceType "${instanceType}"` : `instanceType "${instanceType}" with image "${image}"`}` +
          ` (bound: ${bound.length ? bound.join(", ") : "none"}); add a containers entry with instance_type = "${instanceType}" and its Durable Object binding to wrangler.toml, and name it in AJET_SANDBOX_CLASSES`,
      );
    }
    return ns;
  };
  const stubOf = (id: string): CloudflareSandboxStub => {
    const stub = stubs.get(id);
    if (!stub) throw new SandboxError("infrastructure", `cloudflare sandbox: ${id} was not created by this invocation`, { code: "sandbox_not_found" });
    return stub;
  };
  const charged = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    o.take?.(`sandbox ${what}`);
    try {
      return await fn();
    } catch (err) {
      throw mapError(what, err);
    }
  };
  const inWorkdir = (path: string) => (path === "." ? CLOUDFLARE_WORKDIR : `${CLOUDFLARE_WORKDIR}/${path.replace(/^\.\//, "")}`);

  /** Counts output against the cap; past it the call is aborted and `capped` set. */
  const capper = (req: ExecRequest | CodeRequest) => {
    const ac = new AbortController();
    let bytes = 0;
    let capped = false;
    const out = { stdout: "", stderr: "" };
    const take = (stream: "stdout" | "stderr", chunk: string) => {
      if (capped) return;
      const size = new TextEncoder().encode(chunk).length;
      if (bytes + size > req.maxOutputBytes) {
        capped = true;
        ac.abort(new Error("output cap"));
        return;
      }
      bytes += size;
      out[stream] += chunk;
      req.onOutput?.(stream, chunk);
    };
    return { ac, out, take, get capped() {
      return capped;
    } };
  };

  return {
    name: "cloudflare",
    async create(id: string, spec: CreateSpec) {
      if (!INSTANCE_TYPE_NAMES.includes(spec.instanceType)) throw new SandboxError("config", `instanceType ${JSON.stringify(spec.instanceType)} is not an instance type; use one of ${INSTANCE_TYPE_NAMES.join(", ")}`);
      const ns = bindingFor(spec.instanceType, spec.image);
      const stub =
        stubs.get(id) ??
        o.getSandbox(ns, id, {
          transport: "rpc",
          keepAlive: false,
          sleepAfter: Math.max(60, Math.min(CLOUDFLARE_MAX_SLEEP_AFTER_SECONDS, spec.ttlSeconds)),
          normalizeId: true,
          labels: { owner: "ajet-edge" },
        });
      stubs.set(id, stub);
      // the first operation starts the container (idempotent: a second create finds the same directory)
      await charged("create", () => stub.mkdir(CLOUDFLARE_WORKDIR, { recursive: true }));
      if (Object.keys(spec.env).length) await charged("create (env)", () => stub.setEnvVars(spec.env));
      return { created: true };
    },
    async exec(id: string, req: ExecRequest): Promise<ExecOutcome> {
      const stub = stubOf(id);
      const cap = capper(req);
      const seconds = Math.max(1, Math.ceil(req.timeoutMs / 1000));
      const signal = req.signal ? AbortSignal.any([req.signal, cap.ac.signal]) : cap.ac.signal;
      const options: ExecOptions = {
        stream: true,
        onOutput: (stream, data) => cap.take(stream, data),
        cwd: inWorkdir(req.cwd ?? "."),
        timeout: req.timeoutMs + 10_000,
        signal,
        ...(req.env ? { env: req.env } : {}),
      };
      let r: ExecResult | null = null;
      o.take?.("sandbox command");
      try {
        r = await stub.exec(`timeout -k 2 ${seconds} sh -c ${quote(req.command)}`, options);
      } catch (err) {
        if (!cap.capped) throw mapError("command", err);
      }
      if (cap.capped || !r) return { exitCode: null, stdout: cap.out.stdout, stderr: cap.out.stderr, timedOut: false, capped: true, durationMs: r?.duration ?? 0 };
      // streamed chunks were kept; without streaming the result carries the output
      const stdout = cap.out.stdout || r.stdout;
      const stderr = cap.out.stderr || r.stderr;
      const timedOut = r.exitCode === 124 || r.exitCode === 137;
      return { exitCode: timedOut ? null : r.exitCode, stdout, stderr, timedOut, capped: false, durationMs: r.duration };
    },
    async runCode(id: string, req: CodeRequest): Promise<CodeOutcome> {
      const stub = stubOf(id);
      const cap = capper(req);
      const context = await charged("code context", () => stub.createCodeContext({ language: req.language, cwd: CLOUDFLARE_WORKDIR, ...(req.env ? { envVars: req.env } : {}) }));
      const started = Date.now();
      let r: ExecutionResult | null = null;
      let timedOut = false;
      o.take?.("sandbox code run");
      try {
        const run = stub.runCode(req.code, {
          context,
          timeout: req.timeoutMs,
          signal: req.signal ? AbortSignal.any([req.signal, cap.ac.signal]) : cap.ac.signal,
          onStdout: (m) => cap.take("stdout", m.text),
          onStderr: (m) => cap.take("stderr", m.text),
        });
        r = (await run) as unknown as ExecutionResult;
      } catch (err) {
        const m = err instanceof Error ? err.message : String(err);
        if (/time(d)?\s?out/i.test(m)) timedOut = true;
        else if (!cap.capped) throw mapError("code run", err);
      } finally {
        await charged("code context delete", () => stub.deleteCodeContext(context.id)).catch(() => undefined);
      }
      const durationMs = Date.now() - started;
      if (cap.capped || !r) return { exitCode: null, stdout: cap.out.stdout, stderr: cap.out.stderr, timedOut, capped: cap.capped, durationMs, result: null, error: null };
      const stdout = cap.out.stdout || r.logs.stdout.join("");
      const stderr = cap.out.stderr || r.logs.stderr.join("");
      const first = r.results.find((x) => typeof x.text === "string");
      return {
        exitCode: r.error ? 1 : 0,
        stdout,
        stderr,
        timedOut: false,
        capped: false,
        durationMs,
        result: first?.text ?? null,
        error: r.error ? { name: r.error.name, message: r.error.message, traceback: r.error.traceback.join("\n") } : null,
      };
    },
    async writeFile(id: string, path: string, content: string) {
      const stub = stubOf(id);
      const full = inWorkdir(path);
      const dir = full.slice(0, full.lastIndexOf("/"));
      if (dir !== CLOUDFLARE_WORKDIR) await charged("mkdir", () => stub.mkdir(dir, { recursive: true }));
      await charged("file write", () => stub.writeFile(full, content, { encoding: "utf-8" }));
    },
    async readFile(id: string, path: string) {
      const stub = stubOf(id);
      const r = await charged("file read", () => stub.readFile(inWorkdir(path), { encoding: "utf-8" }));
      return r.content;
    },
    async listFiles(id: string, path: string): Promise<FileEntry[]> {
      const stub = stubOf(id);
      const r = await charged("file list", () => stub.listFiles(inWorkdir(path), { includeHidden: true }));
      return r.files.map((f) => ({ name: f.relativePath || f.name, type: f.type, size: f.type === "file" ? f.size : 0 }));
    },
    /**
     * Destroys the sandbox. Called by another invocation (the run's sweep) it does not know the sandbox's class, so
     * it destroys the id in every bound class: destroying an id never admitted succeeds (SDK ≥ 0.12.5, #799).
     */
    async destroy(id: string) {
      const known = stubs.get(id);
      const targets = known ? [known] : [...new Set(Object.values(o.bindings))].map((ns) => o.getSandbox(ns, id, { transport: "rpc", normalizeId: true }));
      for (const stub of targets) await charged("destroy", () => stub.destroy());
      stubs.delete(id);
      return { existed: known !== undefined };
    },
  };
}
