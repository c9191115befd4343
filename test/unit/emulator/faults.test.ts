/**
 * Named faults (`--fault KIND[:RATE[:MAX]]`) and the journal: each kind fails its request as described — after the
 * server acted where the name says so — and the journal records what the server really did.
 */
import { describe, expect, it } from "vitest";
import { DROP_HEADER, faultHooks, parseFaultFlag, startEmulator } from "../../../src/emulator/index.ts";
import { deriveRng } from "../../../src/emulator/rng.ts";
import { rollingEmulator } from "../runtime/_harness.ts";

const post = (path: string, body: unknown) => new Request(`http://127.0.0.1:10086${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const claimBody = { client_uuid: "c1", episode_type: "train", discard_episode_timeout: 60 };

describe("--fault flags", () => {
  it("parses KIND, KIND:RATE and KIND:RATE:MAX, and names the fix for a bad one", () => {
    expect(parseFaultFlag("claim-lost")).toEqual({ kind: "claim-lost", rate: 1 });
    expect(parseFaultFlag("llm-429:0.25")).toEqual({ kind: "llm-429", rate: 0.25 });
    expect(parseFaultFlag("abort-500:1:2")).toEqual({ kind: "abort-500", rate: 1, max: 2 });
    expect(() => parseFaultFlag("end-404")).toThrow(/unknown kind 'end-404'; use one of end-500-after-act/);
    expect(() => parseFaultFlag("llm-500:2")).toThrow(/rate must be a number from 0 to 1, got '2'/);
    expect(() => parseFaultFlag("llm-500:1:0")).toThrow(/max must be a positive integer, got '0'/);
    expect(parseFaultFlag("end-500-after-act:1::first")).toEqual({ kind: "end-500-after-act", rate: 1, firstOnly: true });
    expect(() => parseFaultFlag("end-500-after-act:1::last")).toThrow(/the 4th field can only be 'first' or a time window in seconds such as '30s', got 'last'/);
    expect(parseFaultFlag("end-502-html:1::30s")).toEqual({ kind: "end-502-html", rate: 1, windowMs: 30_000 });
    expect(() => parseFaultFlag("end-502-html:1::0s")).toThrow(/a time window in seconds such as '30s', got '0s'/);
  });

  it("a time window: every matching request fails for N seconds from the first injection, resends included, then none", () => {
    let now = 1_000_000;
    const injected: string[] = [];
    const hooks = faultHooks([parseFaultFlag("end-502-html:1::30s")], deriveRng(1, "faults"), {}, (kind, _path, uuid) => injected.push(`${kind}:${uuid}`), () => 0, () => now);
    const end = (uuid: string) => hooks.endEpisode?.({ episode_uuid: uuid } as Parameters<NonNullable<typeof hooks.endEpisode>>[0]);
    expect(end("e1")).toMatchObject({ status: 502 });
    now += 29_999;
    expect(end("e1")).toMatchObject({ status: 502 }); // its resend, still inside the window
    expect(end("e2")).toMatchObject({ status: 502 });
    now += 1;
    expect(end("e1")).toBeUndefined();
    expect(end("e3")).toBeUndefined();
    expect(injected).toEqual(["end-502-html:e1", "end-502-html:e1", "end-502-html:e2"]);
  });
});

describe("injected faults and the journal", () => {
  it("claim-lost: the episode is claimed on the server (journal: claim) while the client gets no answer", async () => {
    const { emu } = await rollingEmulator(undefined, { faults: [{ kind: "claim-lost", max: 1 }] });
    const lost = await emu.app.fetch(post("/claim_episode", claimBody));
    expect(lost.headers.get(DROP_HEADER)).toBe("1");
    const claims = emu.journal.events.filter((e) => e.ev === "claim");
    expect(claims).toHaveLength(1);
    const uuid = (claims[0] as { episodeUuid: string }).episodeUuid;
    expect(emu.engine.records.get(uuid)).toMatchObject({ episode_status: "claimed", client_uuid: "c1" });
    expect(emu.journal.events.filter((e) => e.ev === "fault")).toMatchObject([{ kind: "claim-lost", path: "claimEpisode" }]);
    // the cap: the next claim is answered
    const next = await (await emu.app.fetch(post("/claim_episode", claimBody))).json();
    expect(next).toMatchObject({ success: true });
  });

  it("abort-500: the abort fails without acting, the claim stays held; the journal has no abort", async () => {
    const { emu } = await rollingEmulator(undefined, { faults: [{ kind: "abort-500" }] });
    const claim = (await (await emu.app.fetch(post("/claim_episode", claimBody))).json()) as { episode_uuid: string };
    const res = await emu.app.fetch(post("/abort_episode", { client_uuid: "c1", episode_uuid: claim.episode_uuid, task_id: "", workflow_output: { reward: 0, metadata: {} } }));
    expect(res.status).toBe(500);
    expect(emu.engine.records.get(claim.episode_uuid)?.episode_status).toBe("claimed");
    expect(emu.journal.events.filter((e) => e.ev === "abort")).toHaveLength(0);
  });

  it("end-drop-closing: only the end that closed the batch (the engine left ROLLING while handling it) loses its answer; it was accepted", async () => {
    const { emu } = await rollingEmulator({ batchSize: 1, numRepeat: 2, maxEnvWorker: 4 }, { faults: [{ kind: "end-drop-closing" }] });
    const answers: Array<string | null> = [];
    for (let i = 0; i < 2; i++) {
      const claim = (await (await emu.app.fetch(post("/claim_episode", claimBody))).json()) as { episode_uuid: string; openai_api_key: string };
      await emu.app.fetch(new Request("http://127.0.0.1:10086/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${claim.openai_api_key}` }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) }));
      const res = await emu.app.fetch(post("/end_episode", { client_uuid: "c1", episode_uuid: claim.episode_uuid, task_id: "t1", workflow_output: { reward: 1, metadata: { task_id: "t1" } } }));
      answers.push(res.headers.get(DROP_HEADER) ?? String(res.status));
    }
    expect(answers).toEqual(["200", "1"]);
    expect(emu.engine.status).not.toBe("ENGINE.ROLLING");
    expect(emu.journal.events.filter((e) => e.ev === "end")).toHaveLength(2);
    expect(emu.journal.events.filter((e) => e.ev === "fault")).toMatchObject([{ kind: "end-drop-closing", path: "endEpisode" }]);
  });

  it("end-500-after-act: the reward is accepted (journal: end with run and global step) and the client sees a 500", async () => {
    const { emu } = await rollingEmulator(undefined, { faults: [{ kind: "end-500-after-act" }] });
    const claim = (await (await emu.app.fetch(post("/claim_episode", claimBody))).json()) as { episode_uuid: string; openai_api_key: string };
    await emu.app.fetch(new Request("http://127.0.0.1:10086/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${claim.openai_api_key}` }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) }));
    const res = await emu.app.fetch(post("/end_episode", { client_uuid: "c1", episode_uuid: claim.episode_uuid, task_id: "t1", workflow_output: { reward: 1, metadata: { task_id: "t1" } } }));
    expect(res.status).toBe(500);
    const ends = emu.journal.events.filter((e) => e.ev === "end");
    expect(ends).toMatchObject([{ episodeUuid: claim.episode_uuid, taskId: "t1", clientUuid: "c1", run: 1, globalStep: emu.engine.globalStep, reward: 1, dropped: false }]);
    const served = (await (await emu.app.fetch(new Request("http://127.0.0.1:10086/ajet_emulator/journal"))).json()) as { events: unknown[] };
    expect(served.events).toEqual(JSON.parse(JSON.stringify(emu.journal.events)));
  });

  it("llm-429 answers 429 with Retry-After", async () => {
    const { emu } = await rollingEmulator(undefined, { faults: [{ kind: "llm-429", max: 1 }] });
    const claim = (await (await emu.app.fetch(post("/claim_episode", claimBody))).json()) as { openai_api_key: string };
    const chat = () => emu.app.fetch(new Request("http://127.0.0.1:10086/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${claim.openai_api_key}` }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) }));
    const first = await chat();
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("1");
    expect((await chat()).status).toBe(200);
  });

  it("over a socket, a dropped answer is a connection reset", async () => {
    const running = await startEmulator({ port: 0, profile: "fast", faults: [{ kind: "claim-lost" }] });
    try {
      // not ROLLING yet: the claim is answered "not ready", but the fault still drops it after handling
      await expect(fetch(`${running.url}/claim_episode`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(claimBody) })).rejects.toThrow();
    } finally {
      await running.close();
    }
  });
});
