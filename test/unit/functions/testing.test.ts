/** @module test/unit/functions/testing — the createTestContext harness itself. */
import { describe, expect, it } from "vitest";
import { createTestContext, scriptedReplies } from "../../../src/sdk/testing.ts";

const ask = { model: "m", messages: [{ role: "system" as const, content: "s" }, { role: "user" as const, content: "q" }] };

describe("createTestContext", () => {
  it("gives each swarm its own episode and client, and records requests per swarm", async () => {
    const { ctx, requests, callCount } = createTestContext({
      swarms: ["policy", "judge"],
      reply: (_req, { swarm, index }) => `${swarm}#${index}`,
    });
    expect(Object.keys(ctx.openai)).toEqual(["policy", "judge"]);
    expect(ctx.llm).toBe(ctx.openai.policy);
    const a = await ctx.openai.judge!.chat.completions.create(ask);
    const b = await ctx.llm.chat.completions.create(ask);
    expect([a.choices[0]?.message.content, b.choices[0]?.message.content]).toEqual(["judge#0", "policy#1"]);
    expect(requests.map((r) => r.swarm)).toEqual(["judge", "policy"]);
    expect(callCount("judge")).toBe(1);
    expect(callCount()).toBe(2);
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${ctx.episodes.judge!.apiKey}`);
    expect(ctx.episodes.policy!.episodeUuid).toMatch(/^[0-9a-f]{32}$/);
  });

  it("renders tool calls and streams in the swarm's shape", async () => {
    const { ctx } = createTestContext({
      reply: scriptedReplies({ toolCalls: [{ name: "calculator", arguments: { expression: "1+1" } }] }, "streamed \\boxed{2}"),
    });
    const first = await ctx.llm.chat.completions.create(ask);
    expect(first.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: { tool_calls: [{ id: "call_0_0", function: { name: "calculator", arguments: '{"expression":"1+1"}' } }] },
    });
    const stream = await ctx.llm.chat.completions.create({ ...ask, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("streamed \\boxed{2}");
  });

  it("exposes secrets, canContinue, the logger and the abort signal", async () => {
    const { ctx, logs, abort } = createTestContext({ reply: () => "x", secrets: { JUDGE_KEY: "k" }, canContinue: () => false });
    expect(ctx.secrets).toEqual({ JUDGE_KEY: "k" });
    expect(await ctx.canContinue()).toBe(false);
    ctx.log.info("hello", { n: 1 });
    expect(logs).toEqual([{ level: "info", msg: "hello", fields: { n: 1 } }]);
    abort("stop");
    expect(ctx.signal.aborted).toBe(true);
    await expect(ctx.llm.chat.completions.create(ask, { signal: ctx.signal })).rejects.toThrow();
  });

  it("answers 404 to other paths and unknown hosts, and 500 when the script runs out", async () => {
    const { ctx, fetch } = createTestContext({ reply: scriptedReplies() });
    expect((await fetch("http://elsewhere.test/v1/chat/completions", { method: "POST", body: "{}" })).status).toBe(404);
    expect((await fetch(`${ctx.episodes.default!.baseUrl}/models`)).status).toBe(404);
    await expect(ctx.llm.chat.completions.create(ask)).rejects.toMatchObject({ status: 500 });
  });
});
