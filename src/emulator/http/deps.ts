/**
 * @module emulator/http/deps — what the emulator's routes share, and the small helpers that turn operation
 * outcomes into the real server's responses.
 */
import type { Hono } from "hono";
import type { Clock } from "../clock.ts";
import type { EngineSim } from "../engine/engine-sim.ts";
import type { EmulatorHooks } from "../hooks.ts";
import type { Journal } from "../journal.ts";
import type { EmulatorTimings, ServerManners } from "../options.ts";
import type { SimulatedPolicy } from "../policy/policy.ts";
import type { ResolvedUpstream } from "../proxy/upstream.ts";
import type { Rng } from "../rng.ts";
import type { Outcome } from "../server/episodes.ts";
import type { ServerState } from "../server/state.ts";
import { httpException, internalServerError, jsonResponse } from "./fastapi.ts";

/** Shared dependencies of every route. */
export interface AppDeps {
  state: ServerState;
  engine: EngineSim | null;
  policy: SimulatedPolicy;
  hooks: EmulatorHooks;
  clock: Clock;
  timings: EmulatorTimings;
  workDir: string;
  /** Stream for ids the server side makes up (pids, timeline uuids). */
  ids: Rng;
  upstream?: ResolvedUpstream;
  /** what the server did, for `GET /ajet_emulator/journal` and the `--journal` file */
  journal?: Journal;
  /** the simulated gateway: header name (lowercase) → required value; requests without them get 401 */
  requireHeaders?: Readonly<Record<string, string>>;
  /** every request received, in order (method, path, epoch ms on the emulator's clock); kept up to {@link REQUEST_LOG_LIMIT} */
  requestLog?: RequestLogEntry[];
  /** server manners besides timings (the stream ones are read by the LLM routes); default DEFAULT_MANNERS */
  manners?: ServerManners;
  /** aborted by `emulator.close()`: pending LLM generations stop */
  shutdown?: AbortSignal;
}

/** One request the emulator received. */
export interface RequestLogEntry {
  method: string;
  path: string;
  atMs: number;
}

/** Entries the request log keeps (the oldest are dropped). */
export const REQUEST_LOG_LIMIT = 100_000;

/** The methods each path answers; unknown methods on a known path get FastAPI's 405. */
export type RouteTable = Map<string, Set<string>>;

/** Registers a route on the app and in the method table. */
export function route(
  app: Hono,
  table: RouteTable,
  method: "GET" | "POST",
  path: string,
  handler: (req: Request) => Response | Promise<Response>,
): void {
  const methods = table.get(path) ?? new Set<string>();
  methods.add(method);
  table.set(path, methods);
  const h = (c: { req: { raw: Request } }) => handler(c.req.raw);
  if (method === "GET") app.get(path, h);
  else app.post(path, h);
}

/** An operation's outcome as the real server answers it. */
export function outcomeResponse<T>(outcome: Outcome<T>): Response {
  if (outcome.ok) return jsonResponse(outcome.body);
  if (outcome.status === 500) return internalServerError();
  return httpException(outcome.status, outcome.detail ?? "");
}
