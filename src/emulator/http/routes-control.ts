/**
 * @module emulator/http/routes-control — health, config/engine lifecycle, status, experiment dir, pool
 * information, verbose logs, `/replay_latest_llm_call` and the proxy routes: chat, Responses, Messages (spec §1,
 * §3.2–3.7, §3.13, §3.19–3.21; llm-routes §1–§6).
 */
import type { Hono } from "hono";
import { ServerText, SyncTrainConfigRequest } from "../../protocol/index.ts";
import { handleChatCompletion } from "../proxy/chat-route.ts";
import { handleMessages, handleResponses, type LlmRouteDeps } from "../proxy/llm-routes.ts";
import { startEngine, stopEngine, syncTrainCode, syncTrainConfig } from "../server/lifecycle.ts";
import { readPoolInformation, readVerboseLogs } from "../server/pool.ts";
import { outcomeResponse, route, type AppDeps, type RouteTable } from "./deps.ts";
import { httpException, jsonResponse, readBody } from "./fastapi.ts";

/** Registers the control routes and the proxy. */
export function registerControlRoutes(app: Hono, table: RouteTable, deps: AppDeps): void {
  const { state, timings } = deps;

  route(app, table, "GET", "/health", () => jsonResponse({ status: "ok" }));
  route(app, table, "GET", "/get_engine_status", () =>
    jsonResponse({ engine_status: state.engineStatus, engine_status_detail: state.engineStatusDetail, global_step: state.globalStep }),
  );
  route(app, table, "GET", "/get_server_experiment_dir", () => jsonResponse({ server_experiment_dir: state.serverExperimentDir }));
  route(app, table, "POST", "/sync_train_config", async (req) => {
    const parsed = await readBody(req, SyncTrainConfigRequest);
    return parsed.ok ? outcomeResponse(syncTrainConfig(state, parsed.value.yaml_as_string)) : parsed.response;
  });
  route(app, table, "POST", "/sync_train_code", async (req) =>
    outcomeResponse(syncTrainCode(deps, new Uint8Array(await req.arrayBuffer()))),
  );
  route(app, table, "POST", "/start_engine", async () => outcomeResponse(await startEngine(deps)));
  route(app, table, "POST", "/stop_engine", async () => jsonResponse(await stopEngine(deps)));
  route(app, table, "GET", "/get_current_batch_rollout_pool_information", () => jsonResponse(readPoolInformation(state)));
  route(app, table, "GET", "/get_verbose_logs", () => jsonResponse(readVerboseLogs(state, timings.verboseLogTtlMs)));
  route(app, table, "POST", "/replay_latest_llm_call", () =>
    state.latestLlmCall ? jsonResponse(state.latestLlmCall) : httpException(404, ServerText.noLlmCallYet),
  );
  const llm: LlmRouteDeps = { ...deps, llmCallBudgetMs: timings.llmCallBudgetMs, responsesToolCallEvents: deps.manners?.responsesToolCallEvents ?? false };
  route(app, table, "POST", "/v1/chat/completions", (req) => handleChatCompletion(req, { ...llm, chatStreamKeepalive: deps.manners?.chatStreamKeepalive ?? false }));
  route(app, table, "POST", "/v1/responses", (req) => handleResponses(req, llm));
  route(app, table, "POST", "/v1/messages", (req) => handleMessages(req, llm));
}
