/**
 * The Anthropic- and Responses-shaped agents on the real stack (issue 20 §1): the emulator (newest proxy routes)
 * and the Worker in local workerd; `coding-agent` (Anthropic SDK, streamed `/v1/messages` tool loop) and
 * `coding-agent-responses` (OpenAI Responses API, streamed `/v1/responses`) each train 2 steps. Every LLM call
 * reaches the emulator on its route with the episode key, every episode ends exactly once (none left claimed),
 * and the transcript the Worker stored shows the route's shapes: Anthropic content blocks with tool use, Responses
 * output items with function calls.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ChatCallInfo } from "../../src/emulator/hooks.ts";
import { episodeBuffer, fetchWithTimeout, runToEnd, startRig, type E2eRig } from "./_support.ts";

interface StoredCall {
  route?: string;
  status: number;
  messages: unknown[];
  reply: unknown;
}

async function trainTwoSteps(fn: string) {
  // every episode runs one tool round
  const rig: E2eRig = await startRig(["--function", fn, "--batch-size", "2", "--num-repeat", "2", "--steps", "2"], undefined, undefined, { toolCallRate: 1 });
  const calls: ChatCallInfo[] = [];
  rig.emulator.emulator.hooks.chatCompletion = (call) => void calls.push(call);
  const status = await runToEnd(rig, 120_000);
  const fetchApi = (path: string) => fetchWithTimeout(`${rig.session.worker.url}/runs/${status.runId}${path}`, { headers: { authorization: `Bearer ${rig.session.worker.token}` } });
  const { attempts } = (await (await fetchApi("/attempts?window=1")).json()) as { attempts: Array<{ episodeKey: string; kind: string }> };
  const ended = attempts.find((a) => a.kind === "ended")!;
  const transcript = (await (await fetchApi(`/episodes/${encodeURIComponent(ended.episodeKey)}`)).json()) as { llm: StoredCall[]; result: string };
  return { rig, status, calls, transcript };
}

describe("e2e: Anthropic- and Responses-shaped agents through the Worker", () => {
  let rig: E2eRig | undefined;
  afterEach(async () => {
    await rig?.session.close();
    rig = undefined;
  });

  it("coding-agent (Anthropic SDK, streamed tool loop) trains 2 steps; calls on /v1/messages; transcript keeps content blocks and tool use", async () => {
    const r = await trainTwoSteps("coding-agent");
    // the coding agent trains in the all-agree mode: its run voted for each sync (issue 20 §5)
    expect(r.rig.emulator.emulator.engine.trainConfig?.sampleCollectionMethod).toBe("rollout_until_all_clients_agree_sync_weight");
    rig = r.rig;
    expect(r.status.stopReason).toBe("maxSteps");
    expect(r.calls.length).toBeGreaterThan(0);
    expect(new Set(r.calls.map((c) => c.route))).toEqual(new Set(["messages"]));
    expect([...r.rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    expect((await episodeBuffer(r.rig.emulator)).filter((e) => e.episode_status === "claimed")).toEqual([]);
    expect(r.transcript.result).toBe("ended");
    expect(r.transcript.llm.map((c) => [c.route, c.status])).toEqual([["messages", 200], ["messages", 200]]);
    const first = r.transcript.llm[0]!.reply as { content: Array<{ type: string; name?: string }> };
    expect(first.content.some((b) => b.type === "tool_use" && b.name === "calculate")).toBe(true);
    expect(JSON.stringify(r.transcript.llm[1]!.messages)).toContain('"tool_result"');
    expect(JSON.stringify(r.transcript)).not.toMatch(/sk-ajet-/);
  });

  it("coding-agent-responses (Responses API, streamed tool loop) trains 2 steps; calls on /v1/responses; transcript keeps output items", async () => {
    const r = await trainTwoSteps("coding-agent-responses");
    rig = r.rig;
    expect(r.status.stopReason).toBe("maxSteps");
    expect(new Set(r.calls.map((c) => c.route))).toEqual(new Set(["responses"]));
    expect([...r.rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    expect((await episodeBuffer(r.rig.emulator)).filter((e) => e.episode_status === "claimed")).toEqual([]);
    expect(r.transcript.llm.map((c) => [c.route, c.status])).toEqual([["responses", 200], ["responses", 200]]);
    expect(r.transcript.llm[0]!.reply).toEqual([expect.objectContaining({ type: "function_call", name: "calculate" })]);
    expect(r.transcript.llm[1]!.messages).toContainEqual(expect.objectContaining({ type: "function_call_output" }));
    expect(JSON.stringify(r.transcript)).not.toMatch(/sk-ajet-/);
  });
});
