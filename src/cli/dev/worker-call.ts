/**
 * @module cli/dev/worker-call — what `runs`, `status` and `stop` share: the `--worker`/`--token` flags, the runs
 * API client they build from them, and one line (with its exit code) for each way a call to the Worker fails.
 */
import type { Command } from "commander";
import { defineTokenFlag, workerOptionsFrom, type WorkerOptions } from "./options.ts";
import { runsApi, RunsApiError, type RunsApi } from "./runs-api.ts";

/** Declares `--worker URL` (required) and `--token`. */
export function defineWorkerFlags(cmd: Command): void {
  cmd.requiredOption("--worker <url>", "the Worker's base URL, e.g. https://ajet-edge.ACCOUNT.workers.dev or http://127.0.0.1:8787");
  defineTokenFlag(cmd);
}

/** The runs API of `--worker` with `--token` (or `AJET_API_TOKEN`). @throws CliError for a bad URL or an empty token */
export function workerApi(values: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): { api: RunsApi; worker: WorkerOptions } {
  const worker = workerOptionsFrom(values, env);
  return { api: runsApi(worker.workerUrl, fetchFn, worker.token !== undefined ? { token: worker.token } : {}), worker };
}

/**
 * A failed call as one line and an exit code: 404 (no such run: 1), 401/403 (the token: 2), another API error (1),
 * or the Worker not reachable (1).
 */
export function callFailure(err: unknown, o: { command: string; workerUrl: string; runId?: string }): { code: number; line: string } {
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

