/**
 * @module emulator/http/routes-episodes — episode routes (client-facing: claim, end, abort, can-continue,
 * buffer, agree; engine-facing: register, is-claimed, status update, pool push), each validated like FastAPI
 * (422 bodies) and wired to the server operations and the fault hooks.
 */
import type { Hono } from "hono";
import { z } from "zod";
import {
  AgreeSyncWeightRequest,
  CanContinueEpisodeRequest,
  CheckWhetherEpisodeClaimedRequest,
  ClaimEpisodeRequest,
  CurrentBatchRolloutPoolInformation,
  EndEpisodeRequest,
  RegisterEpisodeRequest,
  UpdateEngineStatusRequest,
} from "../../protocol/index.ts";
import { applyFault } from "../hooks.ts";
import type { Journal } from "../journal.ts";
import { abortEpisode, canContinueEpisode, claimEpisode, endEpisode } from "../server/episodes.ts";
import { agreeSyncWeight, pushPoolInformation, pushVerboseLog } from "../server/pool.ts";
import { outcomeResponse, route, type AppDeps, type RouteTable } from "./deps.ts";
import { internalServerError, jsonResponse, readBody } from "./fastapi.ts";

/** `PushVerboseLogRequest` (spec §2.11). */
const PushVerboseLogRequest = z.object({ tag: z.string().default(""), message: z.string() });

/** Reads and validates the body, then runs `fn`; a validation failure answers FastAPI's 422. */
async function withBody<S extends z.core.$ZodType>(req: Request, schema: S, fn: (body: z.output<S>) => Response | Promise<Response>) {
  const parsed = await readBody(req, schema);
  return parsed.ok ? fn(parsed.value) : parsed.response;
}

/** Journals the step-log entry an accepted train `/end_episode` just wrote (eval ends write none). */
function journalEnd(journal: Journal, state: AppDeps["state"], episodeUuid: string, sinceMs: number): void {
  for (let i = state.stepLog.entries.length - 1; i >= 0; i--) {
    const entry = state.stepLog.entries[i]!;
    const ep = [...entry.episodes].reverse().find((e) => e.episodeUuid === episodeUuid && e.atMs >= sinceMs);
    if (ep) {
      journal.add({ ev: "end", atMs: ep.atMs, episodeUuid, taskId: ep.taskId, clientUuid: ep.clientUuid, run: entry.run, globalStep: entry.globalStep, reward: ep.reward, dropped: ep.dropped });
      return;
    }
  }
}

/** Registers the episode and engine-facing routes. */
export function registerEpisodeRoutes(app: Hono, table: RouteTable, deps: AppDeps): void {
  const { state, hooks, clock, timings } = deps;

  const { journal } = deps;
  route(app, table, "POST", "/claim_episode", (req) =>
    withBody(req, ClaimEpisodeRequest, (body) =>
      applyFault(hooks.claimEpisode?.(body), clock, async () => {
        const out = claimEpisode(state, body);
        if (out.ok && out.body.success) {
          hooks.onClaimed?.({ episodeUuid: out.body.episode_uuid, clientUuid: body.client_uuid, atMs: clock.nowMs() });
          journal?.add({ ev: "claim", atMs: clock.nowMs(), episodeUuid: out.body.episode_uuid, clientUuid: body.client_uuid, run: state.runNumber, globalStep: state.globalStep });
        }
        return outcomeResponse(out);
      }),
    ),
  );
  route(app, table, "POST", "/end_episode", (req) =>
    withBody(req, EndEpisodeRequest, (body) =>
      applyFault(hooks.endEpisode?.(body), clock, async () => {
        const startedMs = clock.nowMs();
        const out = await endEpisode(state, body, timings.endAckMs);
        if (journal && out.ok) journalEnd(journal, state, body.episode_uuid, startedMs);
        return outcomeResponse(out);
      }),
    ),
  );
  route(app, table, "POST", "/abort_episode", (req) =>
    withBody(req, EndEpisodeRequest, (body) =>
      applyFault(hooks.abortEpisode?.(body), clock, async () => {
        const held = state.records.get(body.episode_uuid);
        const claimedBy = held?.episode_status === "claimed" ? held.client_uuid : null;
        const out = await abortEpisode(state, body);
        if (journal && out.ok && claimedBy !== null) journal.add({ ev: "abort", atMs: clock.nowMs(), episodeUuid: body.episode_uuid, clientUuid: claimedBy });
        return outcomeResponse(out);
      }),
    ),
  );
  route(app, table, "GET", "/ajet_emulator/journal", () => jsonResponse({ events: journal?.events ?? [] }));
  route(app, table, "POST", "/can_continue_episode", (req) =>
    withBody(req, CanContinueEpisodeRequest, (body) => jsonResponse(canContinueEpisode(state, body))),
  );
  route(app, table, "POST", "/get_episode_buffer", () => jsonResponse({ buffer: [...state.records.values()] }));
  route(app, table, "POST", "/agree_sync_weight", (req) =>
    withBody(req, AgreeSyncWeightRequest, (body) => {
      const result = agreeSyncWeight(state, body.client_uuid);
      return result === "assert" ? internalServerError() : jsonResponse(result);
    }),
  );

  // engine-facing (spec §3.15–3.19)
  route(app, table, "POST", "/update_engine_status", (req) =>
    withBody(req, UpdateEngineStatusRequest, (body) => jsonResponse(state.updateEngineStatus(body))),
  );
  route(app, table, "POST", "/register_episode", (req) =>
    withBody(req, RegisterEpisodeRequest, (body) => jsonResponse(state.registerEpisode(body))),
  );
  route(app, table, "POST", "/is_episode_claimed", (req) =>
    withBody(req, CheckWhetherEpisodeClaimedRequest, (body) =>
      jsonResponse(state.isEpisodeClaimed(body.episode_uuid, body.unregister_if_not_claimed)),
    ),
  );
  route(app, table, "POST", "/update_current_batch_rollout_pool_information_and_fetch_instruction", (req) =>
    withBody(req, CurrentBatchRolloutPoolInformation, (body) => jsonResponse(pushPoolInformation(state, body))),
  );
  route(app, table, "POST", "/push_verbose_log", (req) =>
    withBody(req, PushVerboseLogRequest, (body) => jsonResponse(pushVerboseLog(state, body.tag, body.message, timings.verboseLogTtlMs))),
  );
}
