/**
 * @module cli/dev/worker-call — what `runs`, `status` and `stop` share: the `--worker`/`--token` flags, the runs
 * API client they build from them, and one line (with its exit code) for each way a call to the Worker fails.
 */
import type { Command } from "commander";
import { z } from "zod";
import { CliError } from "../command.ts";
import { defineTokenFlag, workerOptionsFrom, type WorkerOptions } from "./options.ts";
import { boundedFetch, DEFAULT_REQUEST_TIMEOUT_SECONDS, isRequestTimeout } from "./bounded-fetch.ts";
import { runsApi, RunsApiError, type RunsApi } from "./runs-api.ts";


/** Declares `--worker URL` (required), `--token` and `--request-timeout`. */
export function defineWorkerFlags(cmd: Command): void {
  cmd.requiredOption("--worker <url>", "the Worker's base URL, e.g. https://ajet-edge.ACCOUNT.workers.dev or http://127.0.0.1:8787");
  defineTokenFlag(cmd);
  cmd.option("--request-timeout <seconds>", `how long one request to the Worker may take (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS})`);
}

const RequestTimeout = z.coerce.number({ error: "--request-timeout must be a number of seconds, e.g. 30" })
  .positive({ error: "--request-timeout must be > 0 seconds, e.g. 30" }).default(DEFAULT_REQUEST_TIMEOUT_SECONDS);

/**
 * The runs API of `--worker` with `--token` (or `AJET_API_TOKEN`); every request carries `--request-timeout` and
 * `signal` (a command's Ctrl-C). @throws CliError for a bad URL, an empty token or a bad timeout
 */
export function workerApi(values: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch, signal?: AbortSignal): { api: RunsApi; worker: WorkerOptions; requestTimeoutSeconds: number } {
  const worker = workerOptionsFrom(values, env);
  const timeout = RequestTimeout.safeParse(values["requestTimeout"]);
  if (!timeout.success) throw new CliError(timeout.error.issues[0]!.message);
  const bounded = boundedFetch(timeout.data * 1000, () => signal, fetchFn);
  return { api: runsApi(worker.workerUrl, bounded, worker.token !== undefined ? { token: worker.token } : {}), worker, requestTimeoutSeconds: timeout.data };
}

/**
 * A failed call as one line and an exit code: no answer within the request timeout (1), 404 (no such run: 1),
 * 401/403 (the token: 2), another API error (1), or the Worker not reachable (1).
 */
export function callFailure(err: unknown, o: { command: string; workerUrl: string; runId?: string; requestTimeoutSeconds?: number }): { code: number; line: string } {
  if (isRequestTimeout(err)) {
    return { code: 1, line: `the Worker at ${o.workerUrl} did not answer within ${o.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS} s (--request-timeout); check that it runs and is reachable from here` };
  }
  if (err instanceof RunsApiError) {
    if (err.status === 404 && o.runId !== undefined) return { code: 1, line: `no run ${o.runId} on ${o.workerUrl}; list the runs with \`ajet-edge runs --worker ${o.workerUrl}\`` };
    if (err.status === 401 || err.status === 403) return { code: 2, line: `${err.message}\n  ${tokenHint(o.command)}` };
    if (err.status === 404) return { code: 1, line: `${err.message}\n  the Worker at ${o.workerUrl} has no such endpoint: is it an ajet-edge Worker of this version?` };
    return { code: 1, line: err.message };
  }
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return { code: 1, line: `cannot reach the Worker at ${o.workerUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}; check the URL and that it runs` };
}

/** What to do about a 401/403 from the Worker. */
export function tokenHint(command: string): string {
  return command === "dev"
    ? "the local Worker refused this session's token; this is a bug, please report it"
    : "give the Worker's API token with --token TOKEN or the AJET_API_TOKEN environment variable (the Worker's AJET_API_TOKEN secret)";
}

