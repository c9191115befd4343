/**
 * @module sandbox/session — the {@link Sandbox} object a function gets, over one sandbox of a backend: options
 * checked (timeouts cut to the run's `sandbox.commandTimeoutSeconds`, relative paths), no forbidden secret sent
 * in (sandbox/secret-screen), the output cap turned into one clear error, every call recorded for the transcript
 * (capped output), infrastructure failures reported to the attempt (they decide its outcome: never a reward), and
 * nothing sent once the attempt is over.
 */
import type { SandboxBackend } from "./backend.ts";
import type { SecretScreen } from "./secret-screen.ts";
import { SandboxError, type CodeOptions, type CodeResult, type CommandOptions, type CommandResult, type FileEntry, type Sandbox } from "./types.ts";

/** One sandbox call as the transcript lists it. Times are epoch ms; texts are cut to {@link RECORD_TEXT_CHARS}. */
export interface SandboxCallRecord {
  atMs: number;
  sandboxId: string;
  op: "create" | "command" | "code" | "write" | "read" | "list" | "destroy";
  /** the command, the code, or the path */
  input: string;
  exitCode?: number | null;
  timedOut?: boolean;
  stdout?: string;
  stderr?: string;
  /** a code run's result and exception name */
  result?: string | null;
  exception?: string | null;
  durationMs: number;
  /** the failure, when the call failed */
  error?: string;
}

/** Characters of a command, code or output kept in a record. */
export const RECORD_TEXT_CHARS = 2_000;

const cut = (s: string, max = RECORD_TEXT_CHARS) => (s.length <= max ? s : `${s.slice(0, max)}…[cut ${s.length - max} chars]`);

/** What a session needs. */
export interface SessionDeps {
  id: string;
  backend: SandboxBackend;
  /** the run's `sandbox.commandTimeoutSeconds` and `sandbox.maxOutputBytes` */
  commandTimeoutSeconds: number;
  maxOutputBytes: number;
  screen: SecretScreen;
  /** the attempt's stop: in-flight calls are cancelled, later ones refused */
  signal: AbortSignal;
  now(): number;
  /** every call, for the transcript */
  record?(r: SandboxCallRecord): void;
  /** every failed call: the attempt decides which ones abort it whatever the function returns (infrastructure, a stop) */
  onFailure(err: SandboxError): void;
  /** the attempt is over: calls are refused */
  isClosed(): boolean;
}

/** The function's view of one sandbox. */
export function sandboxSession(d: SessionDeps): Sandbox & { readonly calls: number } {
  let calls = 0;
  const maxMs = d.commandTimeoutSeconds * 1000;
  const timeoutOf = (where: string, ms: number | undefined): number => {
    if (ms === undefined) return maxMs;
    if (!Number.isFinite(ms) || ms <= 0) throw new SandboxError("config", `${where}: timeoutMs must be a positive number of milliseconds, got ${String(ms)}`);
    // the run's limit wins over the function's wish (the operator sizes the run)
    return Math.min(Math.ceil(ms), maxMs);
  };
  const relPath = (where: string, path: string): string => {
    if (typeof path !== "string" || path === "") throw new SandboxError("config", `${where}: path must be a non-empty string relative to the sandbox's workdir`);
    if (path.startsWith("/")) throw new SandboxError("config", `${where}: path ${JSON.stringify(path)} is absolute; give it relative to the sandbox's workdir (the same on every backend)`);
    return path;
  };
  /** Runs one call: refused after the attempt; infrastructure failures reported; recorded either way. */
  const call = async <T>(op: SandboxCallRecord["op"], input: string, send: () => Promise<T>, describe: (r: T) => Partial<SandboxCallRecord>): Promise<T> => {
    if (d.isClosed() || d.signal.aborted) throw new SandboxError("closed", `sandbox ${d.id}: the attempt is over; its sandbox is destroyed`);
    calls++;
    const atMs = d.now();
    try {
      const r = await send();
      d.record?.({ atMs, sandboxId: d.id, op, input: cut(input), durationMs: d.now() - atMs, ...describe(r) });
      return r;
    } catch (err) {
      const e = err instanceof SandboxError ? err : d.signal.aborted ? new SandboxError("closed", `sandbox ${d.id}: the attempt was stopped during the call`, { cause: err }) : new SandboxError("infrastructure", `sandbox ${d.id}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      d.onFailure(e);
      d.record?.({ atMs, sandboxId: d.id, op, input: cut(input), durationMs: d.now() - atMs, error: `${e.kind}: ${cut(e.message, 300)}` });
      throw e;
    }
  };
  const capError = (where: string, input: string) =>
    new SandboxError(
      "output_cap",
      `${where} ${JSON.stringify(cut(input, 80))} printed more than the run's sandbox.maxOutputBytes (${d.maxOutputBytes} bytes) and was stopped; write large output to a file and read what you need, or raise sandbox.maxOutputBytes in the run spec`,
    );

  return {
    id: d.id,
    get calls() {
      return calls;
    },
    commands: {
      async run(command: string, options: CommandOptions = {}): Promise<CommandResult> {
        if (typeof command !== "string" || command.trim() === "") throw new SandboxError("config", "commands.run: command must be a non-empty string");
        const timeoutMs = timeoutOf("commands.run", options.timeoutMs);
        d.screen.check("commands.run command", command);
        d.screen.checkAll("commands.run env", options.env);
        const out = await call("command", command, () =>
          d.backend.exec(d.id, {
            command,
            timeoutMs,
            maxOutputBytes: d.maxOutputBytes,
            signal: d.signal,
            ...(options.env ? { env: { ...options.env } } : {}),
            ...(options.cwd !== undefined ? { cwd: relPath("commands.run cwd", options.cwd) } : {}),
            onOutput: (stream, chunk) => (stream === "stdout" ? options.onStdout?.(chunk) : options.onStderr?.(chunk)),
          }),
          (r) => ({ exitCode: r.exitCode, timedOut: r.timedOut, stdout: cut(r.stdout), stderr: cut(r.stderr), ...(r.capped ? { error: "output_cap" } : {}) }),
        );
        if (out.capped) throw capError("commands.run", command);
        return { exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr, timedOut: out.timedOut, durationMs: out.durationMs };
      },
    },
    files: {
      async write(path: string, content: string): Promise<void> {
        const p = relPath("files.write", path);
        if (typeof content !== "string") throw new SandboxError("config", `files.write: content of ${JSON.stringify(path)} must be a string`);
        d.screen.check(`files.write ${path}`, content);
        await call("write", p, () => d.backend.writeFile(d.id, p, content, d.signal), () => ({}));
      },
      async read(path: string): Promise<string> {
        const p = relPath("files.read", path);
        try {
          return await call("read", p, () => d.backend.readFile(d.id, p, d.signal), (r) => ({ stdout: cut(r, 200) }));
        } catch (err) {
          if (err instanceof SandboxError && err.kind === "not_found") throw new SandboxError("not_found", `files.read: no file ${JSON.stringify(path)} in the sandbox`, { cause: err });
          throw err;
        }
      },
      async list(path = "."): Promise<FileEntry[]> {
        const p = path === "." ? "." : relPath("files.list", path);
        return call("list", p, () => d.backend.listFiles(d.id, p, d.signal), (r) => ({ stdout: cut(r.map((e) => e.name).join(" "), 200) }));
      },
    },
    code: {
      async run(code: string, options: CodeOptions = {}): Promise<CodeResult> {
        const language = options.language ?? "python";
        if (language !== "python" && language !== "javascript") {
          throw new SandboxError("config", `code.run: language ${JSON.stringify(language)} is not supported; use "python" or "javascript"`);
        }
        if (typeof code !== "string") throw new SandboxError("config", "code.run: code must be a string");
        const timeoutMs = timeoutOf("code.run", options.timeoutMs);
        d.screen.check("code.run code", code);
        d.screen.checkAll("code.run env", options.env);
        const out = await call("code", code, () =>
          d.backend.runCode(d.id, { language, code, timeoutMs, maxOutputBytes: d.maxOutputBytes, signal: d.signal, ...(options.env ? { env: { ...options.env } } : {}) }),
          (r) => ({ stdout: cut(r.stdout), stderr: cut(r.stderr), timedOut: r.timedOut, result: r.result === null ? null : cut(r.result, 500), exception: r.error?.name ?? null, ...(r.capped ? { error: "output_cap" } : {}) }),
        );
        if (out.capped) throw capError("code.run", code);
        return { stdout: out.stdout, stderr: out.stderr, result: out.result, error: out.error, timedOut: out.timedOut, durationMs: out.durationMs };
      },
    },
  };
}
