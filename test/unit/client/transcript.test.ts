/**
 * The client against the real server's recorded exchanges (`spec/real-server-transcript.jsonl`): each method's
 * request body must equal what the Python client sent, and each recorded answer must map to the right result.
 */
import { expect, it } from "vitest";
import {
  SwarmAPIError,
  SwarmConfigError,
  type ClaimResult,
} from "../../../src/client/index.ts";
import { describeShared, loadTranscript, type TranscriptExchange } from "../../support/shared.ts";
import { scriptedClient, type Reply, type Script } from "./_support.ts";

function find(endpoint: string, pick: (e: TranscriptExchange) => boolean = () => true): TranscriptExchange {
  const hit = loadTranscript().find((e) => e.endpoint === endpoint && pick(e));
  if (!hit) throw new Error(`no recorded exchange for ${endpoint}`);
  return hit;
}
const byVariant = (v: string) => (e: TranscriptExchange) => e.variant === v;
const byProbe = (p: string) => (e: TranscriptExchange) => e.probe_label === p;

/** The recorded response, byte for byte (text bodies stay text). */
function replay(e: TranscriptExchange): Reply {
  const body = typeof e.response.body === "string" ? e.response.body : JSON.stringify(e.response.body);
  return () => new Response(body, { status: e.response.status, headers: e.response.headers });
}

/** A scripted client on the recorded server's URL, with the recorded client uuid. */
const clientFor = (script: Script, clientUuid = "c0472a55-037b-4354-8709-5a786b26d43f") =>
  scriptedClient(script, { baseURL: "http://127.0.0.1:10086", clientUuid });

describeShared("SwarmClient against the recorded real-server transcript", () => {
  it("claim with a throttle policy: same body as the Python client, claimed result", async () => {
    const rec = find("POST /claim_episode", byVariant("success (with throttle_policy)"));
    const { client, server } = clientFor({ "POST /claim_episode": replay(rec) });
    const req = rec.request.body as { discard_episode_timeout: number; throttle_policy: never };
    const r = (await client.claimEpisode({ discardEpisodeTimeoutSeconds: req.discard_episode_timeout, throttlePolicy: req.throttle_policy })) as Extract<ClaimResult, { kind: "claimed" }>;
    expect(server.calls[0]!.body).toEqual(rec.request.body);
    const res = rec.response.body as { episode_uuid: string; openai_api_key: string };
    expect(r).toMatchObject({ kind: "claimed", episodeUuid: res.episode_uuid, apiKey: res.openai_api_key, baseUrl: "http://127.0.0.1:10086/v1" });
  });

  it("claim without a policy sends throttle_policy null; the failures map to values", async () => {
    const rec = find("POST /claim_episode", byVariant("success"));
    const { client, server } = clientFor({ "POST /claim_episode": replay(rec) });
    await client.claimEpisode({ discardEpisodeTimeoutSeconds: 60 });
    expect(server.calls[0]!.body).toEqual(rec.request.body);
    const empty = find("POST /claim_episode", (e) => e.variant.startsWith("fail: No available episodes"));
    expect(await clientFor({ "POST /claim_episode": replay(empty) }).client.claimEpisode()).toMatchObject({ kind: "empty" });
    const offline = find("POST /claim_episode", byProbe("claim_episode:engine_offline"));
    expect(await clientFor({ "POST /claim_episode": replay(offline) }).client.claimEpisode()).toMatchObject({ kind: "notReady", status: "ENGINE.OFFLINE" });
  });

  it("BC-36 the recorded 422 is a SwarmConfigError naming the missing fields", async () => {
    const rec = find("POST /claim_episode", byProbe("claim_episode:validation_error_missing_field"));
    const err = (await clientFor({ "POST /claim_episode": replay(rec) }).client.claimEpisode().catch((e: unknown) => e)) as SwarmConfigError;
    expect(err).toBeInstanceOf(SwarmConfigError);
    expect(err.detail).toContain("body.episode_type: Field required");
    expect(err.issues.map((i) => i.loc?.join("."))).toEqual(["body.episode_type", "body.discard_episode_timeout"]);
  });

  it("end_episode: same body as the Python client", async () => {
    const rec = find("POST /end_episode", byVariant("HTTP 200"));
    const body = rec.request.body as { episode_uuid: string; task_id: string; workflow_output: { reward: number; is_success: boolean; metadata: Record<string, unknown> } };
    const { task_id: _drop, ...metadata } = body.workflow_output.metadata;
    const { client, server } = clientFor({ "POST /end_episode": replay(rec) });
    const r = await client.endEpisode({ task_id: body.task_id }, body.episode_uuid, { reward: body.workflow_output.reward, is_success: body.workflow_output.is_success, metadata });
    expect(r).toEqual({ kind: "ended", deliveredEarlier: false });
    expect(server.calls[0]!.body).toEqual(rec.request.body);
  });

  it("end_episode refusals and the text 500 recorded from the real server", async () => {
    const end = (probe: string) => {
      const rec = find("POST /end_episode", byProbe(probe));
      return clientFor({ "POST /end_episode": replay(rec) }).client.endEpisode("arith-0", (rec.request.body as { episode_uuid: string }).episode_uuid, { reward: 1 });
    };
    expect(await end("end_episode:already_finished_episode")).toMatchObject({ kind: "lost", reason: "notFound" });
    expect(await end("end_episode:not_claimed(aborted)")).toMatchObject({ kind: "expired", reason: "notClaimed" });
    expect(await end("end_episode:engine_offline")).toMatchObject({ kind: "lost", reason: "engineNotRolling" });
    const err = (await end("end_episode:metadata_task_id_missing").catch((e: unknown) => e)) as SwarmAPIError;
    expect(err).toBeInstanceOf(SwarmAPIError);
    expect([err.status, err.detail]).toEqual([500, "Internal Server Error"]);
  });

  it("abort_episode and can_continue_episode: same bodies as the Python client", async () => {
    const abort = find("POST /abort_episode", byVariant("HTTP 200"));
    const cont = find("POST /can_continue_episode", byVariant("HTTP 200"));
    const { client, server } = clientFor({ "POST /abort_episode": replay(abort), "POST /can_continue_episode": replay(cont) });
    expect(await client.abortEpisode((abort.request.body as { episode_uuid: string }).episode_uuid)).toBe(true);
    expect(await client.canContinueEpisode((cont.request.body as { episode_uuid: string }).episode_uuid)).toBe(true);
    expect(server.calls.map((c) => c.body)).toEqual([abort.request.body, cont.request.body]);
  });

  it("sync_train_config sends the YAML verbatim; the recorded 400 carries its detail", async () => {
    const rec = find("POST /sync_train_config", byVariant("HTTP 200"));
    const yaml = (rec.request.body as { yaml_as_string: string }).yaml_as_string;
    const offline = find("GET /get_engine_status", byVariant("ENGINE.OFFLINE"));
    const { client, server } = clientFor({ "GET /get_engine_status": replay(offline), "POST /sync_train_config": replay(rec) });
    await client.syncTrainConfig({ toYaml: () => yaml });
    expect(server.callsTo("POST /sync_train_config")[0]!.body).toEqual(rec.request.body);
    const running = find("POST /sync_train_config", byProbe("sync_train_config:while_engine_running"));
    const err = (await clientFor({ "GET /get_engine_status": replay(offline), "POST /sync_train_config": replay(running) }).client.syncTrainConfig("ajet: {}\n").catch((e: unknown) => e)) as SwarmAPIError;
    expect([err.status, err.detail]).toEqual([400, (running.response.body as { detail: string }).detail]);
  });

  it("engine control and reads parse the recorded answers", async () => {
    const { client } = clientFor({
      "GET /health": replay(find("GET /health")),
      "GET /get_engine_status": [replay(find("GET /get_engine_status", byVariant("ENGINE.ROLLING")))],
      "POST /get_episode_buffer": replay(find("POST /get_episode_buffer", byVariant("HTTP 200"))),
      "GET /get_current_batch_rollout_pool_information": replay(find("GET /get_current_batch_rollout_pool_information", byProbe("get_current_batch_rollout_pool_information:after_batch"))),
      "GET /get_server_experiment_dir": replay(find("GET /get_server_experiment_dir")),
    });
    expect(await client.health()).toEqual({ status: "ok" });
    expect(await client.getEngineStatus()).toEqual({ status: "ENGINE.ROLLING", detail: null, globalStep: 1 });
    expect((await client.getEpisodeBuffer())[0]).toMatchObject({ episode_status: "claimed", episode_type: "train" });
    expect((await client.getRolloutStat()).completed_episodes).toBe(15);
    expect(await client.getServerExperimentDir()).toBe("/srv/ajet/saved_experiments/swarm_run_20261129_093522");
  });
});
