/**
 * @module sandbox/backend — what a sandbox backend does, by sandbox id: create (idempotent), run commands and
 * code, files, destroy (idempotent, resolves once confirmed). Two implementations: the local sandbox server over
 * HTTP (sandbox/local-backend) and Cloudflare's Sandbox SDK (sandbox/cloudflare-backend). Failures are
 * {@link SandboxError}s: `infrastructure` (with `retryable` when the request surely did nothing), `config`,
 * `not_found`.
 */
import type { InstanceType, SandboxBackendName } from "../port/sandbox.ts";
import type { CodeLanguage, FileEntry } from "./types.ts";

/** What a create asks of the backend. */
export interface CreateSpec {
  instanceType: InstanceType;
  /** `"default"` or a backend image name */
  image: string;
  env: Record<string, string>;
  /** the sandbox ends itself after this long whatever happens (a backstop under the run's ledger), seconds */
  ttlSeconds: number;
}

/** One command for the backend. */
export interface ExecRequest {
  command: string;
  timeoutMs: number;
  /** stdout + stderr at most; past it the command is stopped and `capped` set */
  maxOutputBytes: number;
  env?: Record<string, string>;
  cwd?: string;
  signal?: AbortSignal;
  onOutput?(stream: "stdout" | "stderr", chunk: string): void;
}

/** How a command ended on the backend. */
export interface ExecOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** the output passed `maxOutputBytes` (what was kept is its first bytes) */
  capped: boolean;
  durationMs: number;
}

/** One code run for the backend. */
export interface CodeRequest {
  language: CodeLanguage;
  code: string;
  timeoutMs: number;
  maxOutputBytes: number;
  env?: Record<string, string>;
  signal?: AbortSignal;
  onOutput?(stream: "stdout" | "stderr", chunk: string): void;
}

/** How a code run ended on the backend. */
export interface CodeOutcome extends ExecOutcome {
  result: string | null;
  error: { name: string; message: string; traceback: string } | null;
}

/** A sandbox backend. */
export interface SandboxBackend {
  readonly name: SandboxBackendName;
  /**
   * Creates sandbox `id` or finds it made (same id, same sandbox).
   * @returns whether this call made it
   * @throws SandboxError `config` (unknown instance type, image), `infrastructure` (refused, destroyed before, unreachable)
   */
  create(id: string, spec: CreateSpec, signal?: AbortSignal): Promise<{ created: boolean }>;
  /** @throws SandboxError `infrastructure` when the sandbox is gone or the backend fails */
  exec(id: string, req: ExecRequest): Promise<ExecOutcome>;
  /** @throws as {@link SandboxBackend.exec} */
  runCode(id: string, req: CodeRequest): Promise<CodeOutcome>;
  writeFile(id: string, path: string, content: string, signal?: AbortSignal): Promise<void>;
  /** @throws SandboxError `not_found` for a missing file */
  readFile(id: string, path: string, signal?: AbortSignal): Promise<string>;
  listFiles(id: string, path: string, signal?: AbortSignal): Promise<FileEntry[]>;
  /**
   * Destroys sandbox `id` (a sandbox never made, or already gone, counts as destroyed) and resolves once the
   * backend confirms. @throws SandboxError `infrastructure` when it could not confirm (call again)
   */
  destroy(id: string, signal?: AbortSignal): Promise<{ existed: boolean }>;
}
