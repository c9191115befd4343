import { describe, expect, it } from "vitest";
import {
  ClaimEpisodeResponse,
  CurrentBatchRolloutPoolInformation,
  EndEpisodeRequest,
  EngineStatusResponse,
  EpisodeBufferResponse,
  ServerText,
  assertValidWorkflowOutput,
  classifyClaimFailure,
  defaultEpisodeKey,
  endpoints,
  pythonJsonString,
} from "../../../src/protocol/index.ts";
import { describeShared, loadTranscript } from "../../support/shared.ts";

describe("episode key format (spec §5.3)", () => {
  it("matches the key the real engine registered", () => {
    expect(defaultEpisodeKey("c802303116e4448ebb18ab5fcaadff44")).toBe(
      "sk-ajet-eyJhZ2VudF9uYW1lIjogImRlZmF1bHRfYWdlbnRfbmFtZSIsICJ0YXJnZXRfdGFnIjogImRlZmF1bHRfdGFyZ2V0X3RhZyIsICJlcGlzb2RlX3V1aWQiOiAiYzgwMjMwMzExNmU0NDQ4ZWJiMThhYjVmY2FhZGZmNDQiLCAiZXBpc29kZV9hZGRyZXNzIjogImlwYzovLy90bXAvYWpldC9jODAyMzAzMTE2ZTQ0NDhlYmIxOGFiNWZjYWFkZmY0NC1sbG0uc29jayJ9",
    );
  });

  it("escapes strings as Python's json.dumps does with ensure_ascii=True", () => {
    // expected: the output of CPython 3 `json.dumps("é✓\x7f\n\"😀\x01/")`
    expect(pythonJsonString('é✓\u007f\n"😀\u0001/')).toBe(String.raw`"\u00e9\u2713\u007f\n\"\ud83d\ude00\u0001/"`);
  });
});

describe("tolerant reading (BC-36)", () => {
  it("fills defaults for missing response fields and keeps unknown ones", () => {
    const r = ClaimEpisodeResponse.parse({ success: false, brand_new_field: 1 });
    expect(r).toMatchObject({ success: false, episode_uuid: "", fail_cause: "", brand_new_field: 1 });
    expect(EngineStatusResponse.parse({})).toEqual({ engine_status: "unknown", engine_status_detail: null, global_step: null });
    const pool = CurrentBatchRolloutPoolInformation.parse({ completed_episodes: 3 });
    expect(pool.running_episode_details).toBeNull();
    expect(pool.completed_tasks_client_uuids).toEqual({});
  });
  it("requires the pydantic-required request fields", () => {
    const r = EndEpisodeRequest.safeParse({ client_uuid: "c", episode_uuid: "e" });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues.map((i) => i.path.join("."))).toEqual(["workflow_output", "task_id"]);
  });
});

describe("BC-22 reward must be one finite number", () => {
  it.each([
    ["NaN (passed/total with total 0)", 0 / 0],
    ["Infinity", Infinity],
    ["null", null],
    ["a per-step list", [0.2, 1.0]],
  ])("refuses %s and names the field", (_name, reward) => {
    expect(() => assertValidWorkflowOutput({ reward })).toThrow(/workflow_output\.reward/);
  });
  it.each([
    [Number.NaN, "got NaN"],
    [Infinity, "got Infinity"],
    ["1", 'got the string "1"'],
    [null, "got null"],
    [[0.2, 1.0], "got [0.2,1]"],
  ])("says what it received: a reward of %s → 'reward must be a finite number, %s'", (reward, got) => {
    expect(() => assertValidWorkflowOutput({ reward })).toThrow(`workflow_output.reward: reward must be a finite number, ${got}: return one number`);
  });
  it("an output without a reward says so", () => {
    expect(() => assertValidWorkflowOutput({ is_success: true })).toThrow("reward must be a finite number, got no reward field");
  });
  it("accepts a finite number and fills defaults", () => {
    expect(assertValidWorkflowOutput({ reward: 0.5 })).toEqual({ reward: 0.5, is_success: null, metadata: {}, log_metrics: {} });
  });
});

describe("fail_cause texts (spec §3.8)", () => {
  it("builds the exact not-ready texts and classifies them", () => {
    expect(ServerText.engineNotReady("ENGINE.ROLLING_POST")).toBe(
      "Engine not ready. Current status: [ENGINE.ROLLING_POST]. Engine is in post-rolling phase. Try again (maybe 1 minute) later.",
    );
    expect(ServerText.engineNotReady("ENGINE.WHATEVER")).toBe("Engine not ready. Current status: [ENGINE.WHATEVER]. ");
    expect(classifyClaimFailure(ServerText.noAvailableEpisodes)).toBe("noEpisodes");
    expect(classifyClaimFailure(ServerText.vanishedEpisode)).toBe("noEpisodes");
    expect(classifyClaimFailure(ServerText.engineNotReady("ENGINE.WEIGHT_SYNCING"))).toBe("syncing");
    expect(classifyClaimFailure(ServerText.engineNotReady("ENGINE.BOOTING"))).toBe("notReady");
  });
  it("BC-26 end_episode timeout is at least 300 s", () => {
    expect(endpoints.endEpisode.timeoutMs).toBeGreaterThanOrEqual(300_000);
  });
});

describeShared("recorded real-server transcript parses through the schemas", () => {
  const byPath = new Map(Object.values(endpoints).map((e) => [`${e.method} ${e.path}`, e]));
  for (const x of loadTranscript()) {
    const ep = byPath.get(x.endpoint);
    if (!ep || x.response.status !== 200) continue;
    it(`${x.endpoint} — ${x.variant}`, () => {
      expect(ep.response.safeParse(x.response.body).success).toBe(true);
      if (ep.request && x.request.body != null) {
        // Probes deliberately send malformed bodies; natural client traffic must parse.
        if (!x.probe_label) expect(ep.request.safeParse(x.request.body).success).toBe(true);
      }
    });
  }
  it("the episode buffer records parse with every field", () => {
    const x = loadTranscript().find((e) => e.endpoint === "POST /get_episode_buffer")!;
    const buf = EpisodeBufferResponse.parse(x.response.body);
    expect(buf.buffer[0]?.episode_uuid).toMatch(/^[0-9a-f]{32}$/);
  });
});
