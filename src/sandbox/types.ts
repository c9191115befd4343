/**
 * @module sandbox/types — what a rollout function sees of a sandbox (`await ctx.sandbox()`): commands with streamed
 * output, exit code and timeout; files (write, read, list); a code interpreter for Python and JavaScript. The same
 * on every backend (the local sandbox server, Cloudflare's Sandbox SDK). Errors are {@link SandboxError}s whose
 * `cause` says whether the attempt is aborted as an infrastructure failure (never a reward) or a configuration error.
 */
import type { InstanceType } from "../port/sandbox.ts";

/** What `ctx.sandbox(options)` may ask for; the run's `sandbox` block gives the defaults. */
export interface SandboxOptions {
  /** one of lite, basic, standard-1 … standard-4 (default the run's `sandbox.instanceType`, `lite`) */
  instanceType?: InstanceType | (string & {});
  /**
   * the image: `"default"` (Python 3 and Node) on every backend; deployed, another name picks the container class
   * bound for it (wrangler.toml). The local server runs no images and refuses any other name.
   */
  image?: string;
  /** environment variables of every command and code run (no secret unless the run's `sandbox.secrets` names it) */
  env?: Readonly<Record<string, string>>;
  /** files written before the sandbox is handed over: path (relative to the workdir) → UTF-8 content */
  files?: Readonly<Record<string, string>>;
}

/** Options of one command. */
export interface CommandOptions {
  /** wall time before the command (and everything it started) is killed, ms; default the run's `sandbox.commandTimeoutSeconds`, and never more */
  timeoutMs?: number;
  /** more environment variables for this command */
  env?: Readonly<Record<string, string>>;
  /** working directory, relative to the sandbox's workdir (default the workdir) */
  cwd?: string;
  /** streamed output, as it comes (UTF-8 text; a chunk may end inside a line) */
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
}

/** How a command ended. */
export interface CommandResult {
  /** the exit code; null when it was killed (timeout) */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** true when the timeout killed it */
  timedOut: boolean;
  /** wall time, ms */
  durationMs: number;
}

/** A language of the code interpreter. */
export type CodeLanguage = "python" | "javascript";

/** Options of one code run. */
export interface CodeOptions {
  /** default `python` */
  language?: CodeLanguage;
  /** as {@link CommandOptions.timeoutMs} */
  timeoutMs?: number;
  env?: Readonly<Record<string, string>>;
}

/**
 * One code run. Each run starts from a clean interpreter (keep state in files): a timeout or crash never leaves
 * a half-changed session behind, on either backend.
 */
export interface CodeResult {
  stdout: string;
  stderr: string;
  /** the text of the last expression's value (`repr` in Python, `util.inspect` in JavaScript), when it has one */
  result: string | null;
  /** the exception the code raised (not an infrastructure failure: the model's code failed) */
  error: { name: string; message: string; traceback: string } | null;
  timedOut: boolean;
  durationMs: number;
}

/** One directory entry. */
export interface FileEntry {
  /** path relative to the listed directory */
  name: string;
  type: "file" | "directory" | "symlink" | "other";
  /** bytes */
  size: number;
}

/** The attempt's sandbox. It is destroyed when the attempt is over: a function never destroys it by hand. */
export interface Sandbox {
  /** this sandbox's id (derived from the attempt; never reused) */
  readonly id: string;
  readonly commands: {
    /**
     * Runs `command` with `sh -c` in the workdir.
     * @throws SandboxError `output_cap` when stdout + stderr pass the run's `sandbox.maxOutputBytes` (the command is stopped);
     *   `infrastructure` when the sandbox or its backend failed (the attempt is aborted and retried)
     */
    run(command: string, options?: CommandOptions): Promise<CommandResult>;
  };
  readonly files: {
    /** Writes a UTF-8 file (parents created). */
    write(path: string, content: string): Promise<void>;
    /** Reads a UTF-8 file. @throws SandboxError `not_found` when it does not exist */
    read(path: string): Promise<string>;
    /** Lists a directory (default the workdir). */
    list(path?: string): Promise<FileEntry[]>;
  };
  readonly code: {
    /** Runs code in a fresh interpreter. @throws as {@link Sandbox.commands.run} */
    run(code: string, options?: CodeOptions): Promise<CodeResult>;
  };
}

/**
 * Why a sandbox call failed:
 * - `disabled`: the run has no `sandbox` block (configuration: the run spec must enable it)
 * - `config`: a bad option (unknown instance type, an image the backend lacks, a path outside the workdir)
 * - `secret`: a secret the run's `sandbox.secrets` does not name would have entered the sandbox
 * - `output_cap`: a command printed more than `sandbox.maxOutputBytes`
 * - `not_found`: a file that does not exist
 * - `infrastructure`: create refused, sandbox died, backend timeout or unreachable — never the model's fault
 * - `closed`: the attempt is over, the sandbox destroyed
 */
export type SandboxErrorKind = "disabled" | "config" | "secret" | "output_cap" | "not_found" | "infrastructure" | "closed";

/** A failed sandbox call: one line naming the field, the value and the fix. */
export class SandboxError extends Error {
  /** an infrastructure failure where the work surely never started (safe to send again) */
  readonly retryable: boolean;
  /** the backend's code for it, when it gave one (e.g. `sandbox_destroyed`, `sandbox_not_found`) */
  readonly code: string | undefined;
  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    options?: { cause?: unknown; retryable?: boolean; code?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SandboxError";
    this.retryable = options?.retryable ?? false;
    this.code = options?.code;
  }
}

/** The one line a function gets when it asks for a sandbox in a run without one. */
export const SANDBOX_DISABLED_MESSAGE =
  'ctx.sandbox(): this run has no sandboxes (its run spec has no "sandbox" block, or sandbox.enabled is false); add "sandbox": {"enabled": true} to the run spec (ajet-edge dev: --sandbox), or use a function that needs none';

/** True when `err` is a sandbox infrastructure failure (the attempt must not become a reward). */
export function isSandboxInfraError(err: unknown): err is SandboxError {
  return err instanceof SandboxError && err.kind === "infrastructure";
}
