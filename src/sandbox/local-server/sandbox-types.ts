/**
 * @module sandbox/local-server/sandbox-types — the local sandbox server's shapes: its refusal (LocalSandboxError),
 * what a create and a command ask for, how a run ends, a live sandbox as listed, the server's options, and the state
 * of one sandbox that sandbox/local-server/sandboxes and sandbox/local-server/run-command share.
 */
import type { InstanceType } from "../../port/sandbox.ts";

/** A refusal with its HTTP status, a stable code and one line naming the fix. */
export class LocalSandboxError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 410 | 413 | 503,
    readonly code: string,
    message: string,
    /** the request surely did nothing: the client may send it again */
    readonly retryable = false,
  ) {
    super(message);
    this.name = "LocalSandboxError";
  }
}

/** What a create asks for. */
export interface LocalCreateSpec {
  instanceType?: string;
  image?: string;
  env?: Record<string, string>;
  /** the sandbox destroys itself after this long, whatever happens (a backstop under the run's ledger), seconds; default 3600 */
  ttlSeconds?: number;
}

/** One streamed piece of a command's output. */
export type OutputEvent = { stream: "stdout" | "stderr"; data: string };

/** How a command or code run ended. */
export interface RunOutcome {
  exitCode: number | null;
  timedOut: boolean;
  /** stopped because its output passed the cap */
  capped: boolean;
  durationMs: number;
  /** for a code run: the interpreter's `{result, error}` */
  code?: { result: string | null; error: { name: string; message: string; traceback: string } | null };
}

/** A command to run. */
export interface RunRequest {
  timeoutMs: number;
  maxOutputBytes: number;
  env?: Record<string, string>;
  /** relative to the workdir */
  cwd?: string;
  signal?: AbortSignal;
  onOutput?(event: OutputEvent): void;
  /** called once the command's process is started (before any output) */
  onStart?(): void;
}

/** A live sandbox as `GET /v1/sandboxes` lists it. */
export interface LiveSandbox {
  id: string;
  instanceType: InstanceType;
  createdAtMs: number;
  /** commands running now */
  running: number;
}

/** Options of {@link LocalSandboxes.open}. */
export interface LocalSandboxesOptions {
  /** state root shared by server instances; default `<tmpdir>/ajet-edge-sandboxes-<user>` */
  root?: string;
  /** most sandboxes alive at once on this server (a create beyond: 503, retryable); default 4000 */
  maxSandboxes?: number;
  /** share of creates refused with a retryable 503 before doing anything (chaos tests); default 0 */
  createFailRate?: number;
  /** seed of the fault draws */
  seed?: number;
  log?: (line: string) => void;
}

/** One live sandbox's state (internal to the local server: sandboxes and run-command share it). */
export interface Box {
  id: string;
  dir: string;
  instanceType: InstanceType;
  env: Record<string, string>;
  createdAtMs: number;
  /** process groups of commands started (running or with children left) */
  groups: Set<number>;
  running: number;
  ttl: ReturnType<typeof setTimeout>;
  destroying: Promise<void> | null;
  cells: number;
}

/** The longest file read or written through the API, bytes. */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;
