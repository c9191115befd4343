/**
 * Replays every HTTP exchange of the recorded real-server transcript against an emulator driven into the same
 * state, and compares status, content type and body.
 *
 * The emulator runs with `simulateEngine: false`: like the recorded run, an outside "engine" (this harness)
 * posts status updates, registrations and pool pushes with the recorded episode uuids and keys, so every id in
 * the recorded answers is reproduced exactly. Ignored (volatile) values, each checked for its shape instead:
 *  - `latest_activity_timestamp`, `last_activity_at`, `timestamp`, non-null `booting_start_time`, `created`:
 *    wall-clock numbers;
 *  - `pid` of `/start_engine`: a process id;
 *  - chat completion `id` (32 hex, `chatcmpl-` + 32 hex in SSE chunks): a fresh timeline uuid per call;
 *  - chat reply `content`: the recorded simulator's and ours differ in the number they answer; both must have the
 *    template `Let me compute A + B. The result is N. Final answer: \boxed{N}` (so token usage is exact).
 * `server_experiment_dir` is compared exactly (the emulator runs with workDir `/srv/ajet`, as the recording did).
 */
import { expect, it } from "vitest";
import { defaultEpisodeKey } from "../../../src/protocol/index.ts";
import { describeShared, loadTranscript, type TranscriptExchange } from "../../support/shared.ts";
import { advanceUntil, call, makeEmulator } from "./helpers.ts";

const C047 = "c0472a55-037b-4354-8709-5a786b26d43f";
const REPLY = /^Let me compute \d+ \+ \d+\. The result is -?\d+\. Final answer: \\boxed\{-?\d+\}$/;
const VOLATILE_NUMBERS = new Set(["latest_activity_timestamp", "last_activity_at", "timestamp", "booting_start_time", "created", "pid"]);

/** Replaces the documented volatile values by placeholders (after checking their shape). */
function normalize(value: unknown, key = ""): unknown {
  if (VOLATILE_NUMBERS.has(key) && typeof value === "number") return "<number>";
  if (key === "id" && typeof value === "string" && /^(chatcmpl-)?[0-9a-f]{32}$/.test(value)) return "<id>";
  if (key === "content" && typeof value === "string" && REPLY.test(value)) return "<arithmetic reply>";
  if (Array.isArray(value)) return value.map((v) => normalize(v));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, k)]));
  }
  return value;
}

/** SSE bodies are compared as text (Python `json.dumps` separators included) with the volatile values masked. */
function normalizeSse(text: string): string {
  return text
    .replace(/"chatcmpl-[0-9a-f]{32}"/g, '"chatcmpl-<id>"')
    .replace(/"created": \d+/g, '"created": <number>')
    .replace(/"content": "Let me compute \d+ \+ \d+\. The result is -?\d+\. Final answer: \\\\boxed\{-?\d+\}"/g, '"content": "<arithmetic reply>"');
}

const keyOf = (e: TranscriptExchange) => `${e.endpoint} [${e.variant}]${e.probe_label ? ` {${e.probe_label}}` : ""}`;

/** The harness: an emulator plus the recorded "engine" moves. */
class Replay {
  readonly emu;
  readonly clock;
  constructor(private readonly exchanges: TranscriptExchange[]) {
    ({ emu: this.emu, clock: this.clock } = makeEmulator({
      simulateEngine: false,
      workDir: "/srv/ajet",
      policy: { malformedRate: 0, toolCallRate: 0 },
    }));
  }
  recorded(endpoint: string, variant?: string): TranscriptExchange {
    const e = this.exchanges.find((x) => x.endpoint === endpoint && (variant === undefined || x.variant === variant));
    if (!e) throw new Error(`no recorded ${endpoint} ${variant ?? ""}`);
    return e;
  }
  async send(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    let done = false;
    const p = call(this.emu, method, path, body, headers).finally(() => (done = true));
    await advanceUntil(this.clock, () => done);
    return p;
  }
  async ok(method: string, path: string, body?: unknown) {
    const res = await this.send(method, path, body);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    return res.json;
  }
  sync = () => this.ok("POST", "/sync_train_config", this.recorded("POST /sync_train_config").request.body);
  start = async () => {
    await this.sync();
    await this.ok("POST", "/start_engine", {});
  };
  status = (engine_status: string, global_step: number | null = null) =>
    this.ok("POST", "/update_engine_status", { engine_status, engine_status_detail: null, global_step });
  push = (body: unknown) => this.ok("POST", "/update_current_batch_rollout_pool_information_and_fetch_instruction", body);
  emptyPool = () => this.recorded("POST /update_current_batch_rollout_pool_information_and_fetch_instruction", "empty pool").request.body as Record<string, unknown>;
  rolling = async (method?: string) => {
    await this.start();
    await this.status("ENGINE.ROLLING", 1);
    await this.push(method ? { ...this.emptyPool(), sample_collection_method: method } : this.emptyPool());
  };
  register = (uuid: string) =>
    this.ok("POST", "/register_episode", {
      episode_uuid: uuid,
      openai_base_url: "http://127.0.0.1:10086/v1",
      openai_api_key: defaultEpisodeKey(uuid),
      zmq_listen_result_addr: `ipc:///tmp/ajet/${uuid}-workflow.sock`,
    });
  claim = (client: string, o: { type?: string; timeout?: number; task?: string } = {}) =>
    this.ok("POST", "/claim_episode", {
      client_uuid: client,
      episode_type: o.type ?? "train",
      discard_episode_timeout: o.timeout ?? 120,
      throttle_policy: o.task ? { ratio: 1.5, expected_batch_size: 4, expected_num_repeat: 4, current_task_id: o.task } : null,
    });
  registerAndClaim = async (uuid: string, client = C047, o: { type?: string; timeout?: number; task?: string } = {}) => {
    await this.register(uuid);
    const res = await this.claim(client, o);
    expect(res.episode_uuid).toBe(uuid);
  };
  end = (uuid: string, task: string, client = C047) =>
    this.ok("POST", "/end_episode", { client_uuid: client, episode_uuid: uuid, task_id: task, workflow_output: { reward: 1.0, metadata: { task_id: task } } });
  abort = (uuid: string, client = C047) =>
    this.ok("POST", "/abort_episode", { client_uuid: client, episode_uuid: uuid, task_id: "", workflow_output: { reward: 0.0, metadata: {} } });
}

const uuidOf = (e: TranscriptExchange, field = "episode_uuid") => (e.request.body as Record<string, string>)[field] as string;
const keyUuid = (e: TranscriptExchange) => {
  const auth = e.request.headers?.["authorization"] ?? "";
  return JSON.parse(Buffer.from(auth.replace("Bearer sk-ajet-", ""), "base64").toString("utf8")).episode_uuid as string;
};
const bufferUuids = (e: TranscriptExchange) => (e.response.body as { buffer: Array<{ episode_uuid: string }> }).buffer.map((b) => b.episode_uuid);

type Scenario = (r: Replay, e: TranscriptExchange) => Promise<unknown>;
const responseUuid = (e: TranscriptExchange) => (e.response.body as { episode_uuid: string }).episode_uuid;
/** ROLLING (step 1), then the given engine status posts. */
const rollingThen = (...posts: Array<[string, number?]>): Scenario => async (r) => {
  await r.rolling();
  for (const [status, step] of posts) await r.status(status, step ?? null);
};
/** ROLLING with one episode (picked from the exchange) registered, or registered and claimed by the recorded client. */
const withRegistered = (pick: (e: TranscriptExchange) => string): Scenario => async (r, e) => {
  await r.rolling();
  await r.register(pick(e));
};
const withClaimed = (pick: (e: TranscriptExchange) => string, o: { timeout?: number } = {}): Scenario => async (r, e) => {
  await r.rolling();
  await r.registerAndClaim(pick(e), C047, o);
};
const ROLLING_POST: [string] = ["ENGINE.ROLLING_POST"];

/** State preparation per recorded exchange (keyed by endpoint, variant and probe label). */
const scenarios: Record<string, Scenario> = {
  "GET /health [HTTP 200]": async () => {},
  "GET /get_engine_status [ENGINE.OFFLINE]": async () => {},
  "POST /sync_train_config [HTTP 200]": async () => {},
  "GET /get_engine_status [ENGINE.BOOTING]": (r) => r.start(),
  "POST /start_engine [HTTP 200]": (r) => r.sync(),
  "POST /update_engine_status [ENGINE.ROLLING global_step=1]": (r) => r.start(),
  "POST /update_current_batch_rollout_pool_information_and_fetch_instruction [empty pool]": async (r) => {
    await r.start();
    await r.status("ENGINE.ROLLING", 1);
  },
  "GET /get_engine_status [ENGINE.ROLLING]": (r) => r.rolling(),
  "GET /get_current_batch_rollout_pool_information [HTTP 200]": (r) => r.rolling(),
  "POST /claim_episode [fail: No available episodes to claim. Try agai]": (r) => r.rolling(),
  "POST /register_episode [success=True]": (r) => r.rolling(),
  "POST /claim_episode [success (with throttle_policy)]": withRegistered(responseUuid),
  "POST /v1/chat/completions [stream HTTP 200]": withClaimed(keyUuid),
  "POST /v1/chat/completions [non-stream HTTP 200]": withClaimed(keyUuid),
  "POST /can_continue_episode [HTTP 200]": withClaimed(uuidOf),
  "POST /end_episode [HTTP 200]": withClaimed(uuidOf),
  "POST /update_current_batch_rollout_pool_information_and_fetch_instruction [with completed tasks]": async (r) => {
    await r.rolling();
    await r.registerAndClaim("7187982b55514d4989555b27c0bcb79b");
    await r.end("7187982b55514d4989555b27c0bcb79b", "arith-2");
  },
  "POST /update_engine_status [ENGINE.ROLLING_POST global_step=None]": (r) => r.rolling(),
  "GET /get_engine_status [ENGINE.ROLLING_POST]": rollingThen(ROLLING_POST),
  "POST /is_episode_claimed [success=False]": async (r, e) => {
    await withRegistered(uuidOf)(r, e);
    await r.status("ENGINE.ROLLING_POST");
  },
  "POST /update_engine_status [ENGINE.WEIGHT_SYNCING global_step=None]": rollingThen(ROLLING_POST),
  "POST /update_engine_status [ENGINE.WEIGHT_SYNCING global_step=1]": rollingThen(ROLLING_POST, ["ENGINE.WEIGHT_SYNCING"]),
  "POST /push_verbose_log [HTTP 200]": (r) => r.rolling(),
  "GET /get_engine_status [ENGINE.WEIGHT_SYNCING]": rollingThen(ROLLING_POST, ["ENGINE.WEIGHT_SYNCING"], ["ENGINE.WEIGHT_SYNCING", 1]),
  "POST /update_engine_status [ENGINE.ROLLING global_step=2]": rollingThen(ROLLING_POST, ["ENGINE.WEIGHT_SYNCING", 1]),
  "POST /claim_episode [success]": withRegistered(responseUuid),
  "POST /get_episode_buffer [HTTP 200]": async (r, e) => {
    await r.rolling();
    for (const uuid of bufferUuids(e)) await r.register(uuid);
    await r.claim(C047, { timeout: 60 });
  },
  "POST /abort_episode [HTTP 200]": withClaimed(uuidOf, { timeout: 60 }),
  "POST /stop_engine [HTTP 200]": (r) => r.rolling(),
  "POST /agree_sync_weight [HTTP 200]": async (r, e) => {
    await r.rolling("rollout_until_any_client_agree_sync_weight");
    await r.registerAndClaim("aaaaaaaaaaaa4aaa8aaaaaaaaaaaaaaa", uuidOf(e, "client_uuid"));
    await r.end("aaaaaaaaaaaa4aaa8aaaaaaaaaaaaaaa", "task-0", uuidOf(e, "client_uuid"));
  },
  "GET /get_current_batch_rollout_pool_information [HTTP 200] {get_current_batch_rollout_pool_information:after_batch}": async (r, e) => {
    const recorded = e.response.body as Record<string, unknown>;
    await r.rolling();
    let n = 0;
    for (const [task, clients] of Object.entries(recorded["completed_tasks_client_uuids"] as Record<string, string[]>)) {
      for (const client of clients) {
        const uuid = (n++).toString(16).padStart(32, "0");
        await r.registerAndClaim(uuid, client, { task });
        await r.end(uuid, task, client);
      }
    }
    await r.status("ENGINE.ROLLING_POST");
    const engineFields = Object.fromEntries(Object.entries(recorded).filter(([k]) => !["engine_status", "global_step", "booting_start_time", "training_model_path", "swarm_client_instruction", "running_episode_details", "completed_tasks_client_uuids"].includes(k)));
    await r.push({ ...r.emptyPool(), ...engineFields });
  },
  "POST /replay_latest_llm_call [HTTP 200] {replay_latest_llm_call}": async (r, e) => {
    await r.rolling();
    await r.registerAndClaim("bbbbbbbbbbbb4bbb8bbbbbbbbbbbbbbb");
    const input = (e.response.body as { input: unknown }).input;
    const res = await r.send("POST", "/v1/chat/completions", input, { authorization: `Bearer ${defaultEpisodeKey("bbbbbbbbbbbb4bbb8bbbbbbbbbbbbbbb")}` });
    expect(res.status).toBe(200);
  },
  "GET /get_server_experiment_dir [HTTP 200] {get_server_experiment_dir}": (r) => r.start(),
  "POST /end_episode [HTTP 400] {end_episode:already_finished_episode}": async (r, e) => {
    await withClaimed(uuidOf)(r, e);
    await r.end(uuidOf(e), "arith-0");
  },
  "POST /v1/chat/completions [non-stream HTTP 404] {v1_chat_completions:finished_episode}": async (r, e) => {
    await withClaimed(keyUuid)(r, e);
    await r.end(keyUuid(e), "arith-0");
  },
  "POST /v1/chat/completions [non-stream HTTP 200] {v1_chat_completions:missing_authorization}": (r) => r.rolling(),
  "POST /v1/chat/completions [non-stream HTTP 200] {v1_chat_completions:garbage_authorization}": (r) => r.rolling(),
  "GET /get_verbose_logs [HTTP 200] {get_verbose_logs}": (r) => r.ok("POST", "/push_verbose_log", r.recorded("POST /push_verbose_log").request.body),
  "POST /is_episode_claimed [success=True] {is_episode_claimed:claimed}": withClaimed(uuidOf),
  "POST /end_episode [HTTP 400] {end_episode:not_claimed(aborted)}": async (r, e) => {
    await withClaimed(uuidOf)(r, e);
    await r.abort(uuidOf(e));
  },
  "POST /end_episode [HTTP 500] {end_episode:metadata_task_id_missing}": withClaimed(uuidOf),
  "POST /agree_sync_weight [HTTP 500] {agree_sync_weight:method_not_agree_based}": (r) => r.rolling(),
  "POST /claim_episode [success] {claim_episode:eval}": withRegistered(responseUuid),
  "POST /claim_episode [HTTP 400] {claim_episode:unknown_episode_type}": (r) => r.rolling(),
  "POST /claim_episode [HTTP 422] {claim_episode:validation_error_missing_field}": (r) => r.rolling(),
  "POST /update_engine_status [ENGINE.NOPE global_step=None] {update_engine_status:invalid_status}": (r) => r.rolling(),
  "POST /get_episode_buffer [HTTP 200] {get_episode_buffer}": async (r, e) => {
    await r.rolling();
    for (const uuid of bufferUuids(e)) await r.register(uuid);
    await r.claim(C047, { timeout: 60 });
    await r.claim("probe-client", { type: "eval", timeout: 30 });
    await r.abort(bufferUuids(e)[0] as string);
  },
};
// Probes recorded against a fresh (OFFLINE) server need no preparation.
for (const probe of [
  "POST /claim_episode [fail: Engine not ready. Current status: [ENGIN] {claim_episode:engine_offline}",
  "GET /get_current_batch_rollout_pool_information [HTTP 200] {get_current_batch_rollout_pool_information:engine_offline}",
  "POST /register_episode [success=False] {register_episode:engine_offline}",
  "POST /end_episode [HTTP 400] {end_episode:engine_offline}",
  "POST /abort_episode [HTTP 200] {abort_episode:engine_offline}",
  "POST /can_continue_episode [HTTP 200] {can_continue_episode:engine_offline}",
  "POST /stop_engine [HTTP 200] {stop_engine:already_offline}",
]) scenarios[probe] = async () => {};
scenarios["POST /sync_train_config [HTTP 400] {sync_train_config:while_engine_running}"] = (r) => r.start();

describeShared("emulator replays the recorded real-server transcript", () => {
  const exchanges = loadTranscript();

  it("has a prepared state for every recorded exchange", () => {
    expect(exchanges.length).toBeGreaterThan(50);
    expect(exchanges.map(keyOf).filter((k) => !scenarios[k])).toEqual([]);
  });

  for (const exchange of exchanges) {
    it(keyOf(exchange), async () => {
      const r = new Replay(exchanges);
      await scenarios[keyOf(exchange)]?.(r, exchange);
      const [method, path] = exchange.endpoint.split(" ") as [string, string];
      const headers: Record<string, string> = {};
      for (const h of ["authorization", "content-type"]) {
        const v = exchange.request.headers?.[h];
        if (v !== undefined) headers[h] = v;
      }
      const body = exchange.request.body === null ? undefined : exchange.request.body;
      const res = await r.send(method, path, body, headers);

      expect(res.status, res.text).toBe(exchange.response.status);
      expect(res.contentType).toBe(exchange.response.headers["content-type"]);
      if (typeof exchange.response.body === "string") {
        const recorded = exchange.response.body;
        expect(normalizeSse(res.text)).toBe(normalizeSse(recorded));
      } else {
        expect(normalize(res.json)).toEqual(normalize(exchange.response.body));
      }
      r.emu.close();
    });
  }

  it("the SIMULATED engine, booted on the recorded YAML, answers status and pool information as recorded", async () => {
    const { emu, clock } = makeEmulator({ seed: 1 });
    const recorded = (endpoint: string, variant: string) => exchanges.find((x) => x.endpoint === endpoint && x.variant === variant) as TranscriptExchange;
    await call(emu, "POST", "/sync_train_config", recorded("POST /sync_train_config", "HTTP 200").request.body);
    let started = false;
    const start = call(emu, "POST", "/start_engine", {}).finally(() => (started = true));
    await advanceUntil(clock, () => started);
    expect(normalize((await start).json)).toEqual(normalize(recorded("POST /start_engine", "HTTP 200").response.body));
    await advanceUntil(clock, () => emu.engine.status === "ENGINE.ROLLING");
    expect((await call(emu, "GET", "/get_engine_status")).json).toEqual(recorded("GET /get_engine_status", "ENGINE.ROLLING").response.body);
    const pool = (await call(emu, "GET", "/get_current_batch_rollout_pool_information")).json;
    expect(pool).toEqual(recorded("GET /get_current_batch_rollout_pool_information", "HTTP 200").response.body);
    expect(emu.engine.queue).toHaveLength(16); // min(4, ceil(16 / 4)) × 4
    emu.close();
  });

  it("is_episode_claimed with unregister_if_not_claimed withdraws the registered record (transcript #20 state)", async () => {
    const r = new Replay(exchanges);
    await r.rolling();
    await r.register("25be956a78944809827184e15e52428d");
    await r.status("ENGINE.ROLLING_POST");
    await r.ok("POST", "/is_episode_claimed", { episode_uuid: "25be956a78944809827184e15e52428d", unregister_if_not_claimed: true });
    expect(r.emu.engine.records.has("25be956a78944809827184e15e52428d")).toBe(false);
    expect(r.emu.engine.queue).toEqual([]);
  });
});
