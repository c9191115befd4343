/**
 * @module client/errors — the SwarmClient's typed errors (openai-node style, issue 2 §3): one base class, the HTTP
 * error with status and `detail`, and the transport, timeout, abort, protocol, config, offline and deadline cases.
 */
import type { z } from "zod";

/** Base class of every error the SwarmClient throws (except `InvalidWorkflowOutputError` from src/protocol, BC-22). */
export class SwarmError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** One FastAPI validation issue from a 422 body (spec §1): `{type, loc, msg, input}`. */
export interface FastApiValidationIssue {
  type?: string;
  loc?: (string | number)[];
  msg?: string;
  input?: unknown;
  [key: string]: unknown;
}

/**
 * The server answered with HTTP status ≥ 400 (spec §1). `detail` is the JSON body's `detail` string
 * (`HTTPException`), a readable summary of a 422 issue list, or the raw text of a non-JSON body
 * (`Internal Server Error` from a server `assert`, spec §3.9). `body` is the parsed JSON, or the text.
 */
export class SwarmAPIError extends SwarmError {
  constructor(
    /** HTTP status, e.g. 400, 404, 500 */
    readonly status: number,
    /** the endpoint table name (`endEpisode`) */
    readonly endpoint: string,
    /** the route, e.g. `POST /end_episode` */
    readonly route: string,
    /** the server's `detail` text (or the whole text body) */
    readonly detail: string,
    /** the parsed JSON body, or the raw text when the body is not JSON */
    readonly body: unknown,
  ) {
    super(`SwarmClient error ${status} on ${route}: ${detail}`);
  }
}

/**
 * HTTP 422: the server rejected the request shape (a missing required field, a wrong type — spec §1, BC-36). This
 * is a configuration error (client and server versions disagree): never retried. `issues` are FastAPI's.
 */
export class SwarmConfigError extends SwarmAPIError {
  readonly issues: FastApiValidationIssue[];
  constructor(endpoint: string, route: string, detail: string, body: unknown, issues: FastApiValidationIssue[]) {
    super(422, endpoint, route, detail, body);
    this.issues = issues;
  }
}

/**
 * The request did not get an HTTP answer (DNS, refused, reset, or an error thrown by the injected fetch, e.g. a
 * subrequest-budget guard). The outcome on the server is unknown for POSTs. `cause` is the underlying error.
 */
export class SwarmConnectionError extends SwarmError {
  constructor(
    readonly endpoint: string,
    message: string,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

/** One HTTP call exceeded its timeout (`timeoutMs`, spec §8.2, BC-26); the server-side outcome is unknown. */
export class SwarmTimeoutError extends SwarmConnectionError {
  constructor(
    endpoint: string,
    readonly route: string,
    readonly timeoutMs: number,
  ) {
    super(endpoint, `${route} timed out after ${timeoutMs} ms (the server may still complete it)`, undefined);
  }
}

/** The caller's AbortSignal fired. `cause` is the signal's reason. */
export class SwarmAbortError extends SwarmError {
  constructor(what: string, reason?: unknown) {
    super(`${what} aborted by the caller's signal`, { cause: reason });
  }
}

/** A 2xx response did not have the expected shape (non-JSON, or the zod schema failed). `issues` are zod's. */
export class SwarmProtocolError extends SwarmError {
  constructor(
    readonly endpoint: string,
    readonly route: string,
    message: string,
    readonly issues: z.core.$ZodIssue[],
    readonly body: unknown,
  ) {
    super(`${route}: ${message}`);
  }
}

/**
 * The engine went OFFLINE while we waited for another status, after a non-OFFLINE status had been seen (spec §4.5,
 * §11.10): the engine died or someone stopped it. Message as the Python client's `SwarmServerOfflineError`.
 */
export class SwarmServerOfflineError extends SwarmError {
  constructor(readonly waitingFor: readonly string[]) {
    super(
      `Engine status is OFFLINE while waiting for [${waitingFor.join(", ")}]. This may indicate an error in the engine. Please check the swarm server logs for details.`,
    );
  }
}

/**
 * A multi-step wait (beginEpisode, a status watch) reached its `deadlineMs` before it succeeded. `lastStatus` is the
 * last engine status seen (or null); `cause` is the last error, if the last attempt failed with one.
 */
export class SwarmDeadlineError extends SwarmError {
  constructor(
    readonly what: string,
    readonly lastStatus: string | null,
    cause?: unknown,
  ) {
    super(`${what}: deadline reached${lastStatus ? ` (last engine status: ${lastStatus})` : ""}`, { cause });
  }
}

/** The engine is in a status that forbids the operation (checked locally before sending, spec §3.2, §4.5). */
export class SwarmEngineStateError extends SwarmError {
  constructor(
    message: string,
    readonly engineStatus: string,
  ) {
    super(message);
  }
}

/** A control call answered 200 with `success: false` (spec §3.2, §3.4, §3.5, §3.9). `reason` is the server's text. */
export class SwarmOperationError extends SwarmError {
  constructor(
    readonly endpoint: string,
    message: string,
    readonly reason: string,
  ) {
    super(reason ? `${message}: ${reason}` : message);
  }
}

/** Bad arguments or client configuration, refused before any network call (BC-30, spec §7.1, §11.14). */
export class SwarmInputError extends SwarmError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/**
 * True when a failed call may be retried after a back-off: a connection error or timeout (unless the injected
 * fetch marked its error `retryable: false`, e.g. an exhausted subrequest budget), or HTTP 408, 429 or ≥ 500.
 * Never true for 422 (BC-36), other 4xx, protocol, abort, input or offline errors. Used by `beginEpisode`; never
 * apply it to `endEpisode` (not idempotent, BC-26).
 */
export function isRetryableError(err: unknown): boolean {
  if (err instanceof SwarmConnectionError) {
    const cause = err.cause as { retryable?: unknown } | undefined;
    return !(cause && typeof cause === "object" && cause.retryable === false);
  }
  if (err instanceof SwarmConfigError) return false;
  if (err instanceof SwarmAPIError) return err.status >= 500 || err.status === 408 || err.status === 429;
  return false;
}
