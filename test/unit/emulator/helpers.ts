/**
 * @module test/unit/emulator/helpers — drives an in-process emulator on a manual clock: HTTP calls through
 * `app.fetch` (no socket), calls that wait on the emulator's clock, and the usual client moves (boot, claim,
 * chat, end). No real sleeps.
 */
import { expect } from "vitest";
import { createEmulator, createManualClock, type Emulator, type EmulatorOptions, type ManualClock } from "../../../src/emulator/index.ts";

/** A response, read once. `json` is undefined when the body is not JSON. */
export interface CallResult {
  status: number;
  contentType: string | null;
  text: string;
  json: any;
}

/** An emulator on a manual clock with the `fast` profile. */
export function makeEmulator(options: EmulatorOptions = {}): { emu: Emulator; clock: ManualClock } {
  const clock = createManualClock();
  const emu = createEmulator({ profile: "fast", ...options, clock });
  return { emu, clock };
}

/** Sends one request. `body`: a string is sent raw, anything else as JSON, undefined sends no body. */
export async function call(
  emu: Emulator,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<CallResult> {
  const init: RequestInit = { method, headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers } };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  const res = await emu.app.fetch(new Request(`http://127.0.0.1:10086${path}`, init));
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get("content-type"), text, json };
}

/** Advances the manual clock in `stepMs` steps until `done()` or `maxMs` elapsed. @throws when it never happens. */
export async function advanceUntil(clock: ManualClock, done: () => boolean, stepMs = 5, maxMs = 600_000): Promise<void> {
  for (let t = 0; t <= maxMs; t += stepMs) {
    if (done()) return;
    await clock.advance(stepMs);
  }
  throw new Error(`condition not reached within ${maxMs} ms of emulator time`);
}

/**
 * A call whose handler waits on the emulator's clock (start/stop engine, delays): the clock advances in `stepMs`
 * steps until it answers.
 */
export async function callAdvancing(emu: Emulator, clock: ManualClock, method: string, path: string, body?: unknown, stepMs = 5) {
  let finished = false;
  const pending = call(emu, method, path, body).finally(() => {
    finished = true;
  });
  await advanceUntil(clock, () => finished, stepMs);
  return pending;
}

/** A minimal AgentJetJob YAML with the fields the emulator reads. */
export function yamlConfig(c: { batchSize?: number; numRepeat?: number; maxEnvWorker?: number; method?: string; modelPath?: string; totalTrainingSteps?: number } = {}): string {
  return [
    "ajet:",
    "  experiment_name: unit_run",
    "  model:",
    `    path: ${c.modelPath ?? "sim/fake-policy-model"}`,
    "  data:",
    `    train_batch_size: ${c.batchSize ?? 2}`,
    "  rollout:",
    `    num_repeat: ${c.numRepeat ?? 4}`,
    `    max_env_worker: ${c.maxEnvWorker ?? 128}`,
    ...(c.totalTrainingSteps ? ["  trainer_common:", `    total_training_steps: ${c.totalTrainingSteps}`] : []),
    `  swarm_mode_sample_collection_method: ${c.method ?? "rollout_until_finish_enough_tasks"}`,
  ].join("\n");
}

/** Syncs the config, starts the engine and waits (emulator time) until ROLLING. */
export async function bootToRolling(emu: Emulator, clock: ManualClock, config: Parameters<typeof yamlConfig>[0] = {}): Promise<void> {
  expect((await call(emu, "POST", "/sync_train_config", { yaml_as_string: yamlConfig(config) })).status).toBe(200);
  const start = await callAdvancing(emu, clock, "POST", "/start_engine", {});
  expect(start.json).toMatchObject({ success: true });
  await advanceUntil(clock, () => emu.engine.status === "ENGINE.ROLLING");
}

/** Claims one episode (train by default) and asserts success. */
export async function claim(emu: Emulator, clientUuid = "client-a", extra: Record<string, unknown> = {}) {
  const res = await call(emu, "POST", "/claim_episode", {
    client_uuid: clientUuid,
    episode_type: "train",
    discard_episode_timeout: 60,
    throttle_policy: null,
    ...extra,
  });
  expect(res.json, res.text).toMatchObject({ success: true });
  return res.json as { episode_uuid: string; openai_api_key: string; openai_base_url: string };
}

/** One chat call with the episode key. */
export function chat(emu: Emulator, apiKey: string, body: Record<string, unknown> = {}) {
  return call(
    emu,
    "POST",
    "/v1/chat/completions",
    { model: "m", messages: [{ role: "system", content: "You are a careful math assistant." }, { role: "user", content: "What is 2 + 3? Put the final integer answer in \\boxed{}." }], ...body },
    { authorization: `Bearer ${apiKey}` },
  );
}

/** `/end_episode` with a consistent task id in metadata. */
export function end(emu: Emulator, episodeUuid: string, taskId: string, reward: unknown, clientUuid = "client-a") {
  return call(emu, "POST", "/end_episode", {
    client_uuid: clientUuid,
    episode_uuid: episodeUuid,
    task_id: taskId,
    workflow_output: { reward, is_success: reward === 1, metadata: { task_id: taskId }, log_metrics: {} },
    declare_client_active: true,
  });
}

/** `/abort_episode` as the Python client sends it. */
export function abort(emu: Emulator, episodeUuid: string, clientUuid = "client-a") {
  return call(emu, "POST", "/abort_episode", {
    client_uuid: clientUuid,
    episode_uuid: episodeUuid,
    task_id: "",
    workflow_output: { reward: 0.0, is_success: null, metadata: {}, log_metrics: {} },
    declare_client_active: true,
  });
}

/** A whole train episode: claim, `llmCalls` chat calls, end with `reward`. @returns the episode uuid. */
export async function runEpisode(emu: Emulator, taskId: string, reward: number, opts: { clientUuid?: string; llmCalls?: number } = {}) {
  const c = await claim(emu, opts.clientUuid ?? "client-a");
  for (let i = 0; i < (opts.llmCalls ?? 1); i++) expect((await chat(emu, c.openai_api_key)).status).toBe(200);
  const res = await end(emu, c.episode_uuid, taskId, reward, opts.clientUuid ?? "client-a");
  expect(res.status, res.text).toBe(200);
  return c.episode_uuid;
}
