/** @module test/unit/functions/math-agent — the GSM8K agent end to end through createTestContext (BC-04, BC-43, BC-44). */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import mathAgent, { answerReadersFor, defaultAnswerReaders, mathGold, runAgentAndComputeReward, runMathAgent } from "../../../functions/math-agent.ts";
import { EpisodeAbortError, fromAgentRun } from "../../../src/sdk/contract.ts";
import { createTestContext, scriptedReplies } from "../../../src/sdk/testing.ts";
import { Task } from "../../../src/protocol/index.ts";
import { parseGsm8kGold } from "../../../src/rewards/index.ts";
import { describeShared, sharedPath } from "../../support/shared.ts";

const task = Task.parse({
  task_id: "gsm8k:test:2",
  main_query: "Josh buys a house for $80,000 and puts in $50,000 in repairs … How much profit did he make?",
  metadata: { answer: "80,000+50,000=$<<80000+50000=130000>>130,000\n…\n#### 70000" },
});

const calc = (expression: string, extra: Record<string, unknown> = {}) => ({
  content: null,
  toolCalls: [{ name: "calculator", arguments: JSON.stringify({ expression }), ...extra }],
});

describe("math-agent: answer readers fit the dataset kind", () => {
  const bareGold = Task.parse({ task_id: "math:test:0", main_query: "What is 9 × 2?", metadata: { gold: "18" } });
  const gsm8k18 = Task.parse({ task_id: "gsm8k:test:0", main_query: "Eggs?", metadata: { answer: "9 * 2 = <<9*2=18>>18\n#### 18", gold: "18" } });
  const reply = async (t: Task, text: string) => mathAgent.run(t, createTestContext({ reply: () => text }).ctx);

  it("BC-10 a GSM8K task accepts `#### 18` as well as a box; a task without a GSM8K rationale reads the box only", async () => {
    expect(defaultAnswerReaders(gsm8k18)).toEqual(["boxed", "hash"]);
    expect(defaultAnswerReaders(bareGold)).toEqual(["boxed"]);
    expect(await reply(gsm8k18, "9 eggs × $2 = $18.\n#### 18")).toMatchObject({ reward: 1, metadata: { source: "hash", answer_readers: ["boxed", "hash"] } });
    expect(await reply(gsm8k18, "so \\boxed{18}")).toMatchObject({ reward: 1, metadata: { source: "boxed" } });
    expect(await reply(bareGold, "#### 18")).toMatchObject({ reward: 0, metadata: { reason: "no_answer", answer_readers: ["boxed"] } });
  });

  it("BC-10 near misses under #### score 0 on a GSM8K task: `#### 19`, `#### 18.5`, `#### 18 or 19`", async () => {
    for (const text of ["#### 19", "#### 18.5", "#### 18 or 19"]) expect((await reply(gsm8k18, text)).reward).toBe(0);
  });

  it("the run's choice on the task (metadata.answer_readers) turns on the final-number reader for prose answers", async () => {
    const prose = Task.parse({ ...gsm8k18, metadata: { ...gsm8k18.metadata, answer_readers: ["boxed", "hash", "final-number"] } });
    expect(await reply(prose, "Adding it up, the answer is 18.")).toMatchObject({ reward: 1, metadata: { source: "final-number" } });
    expect(await reply(gsm8k18, "Adding it up, the answer is 18.")).toMatchObject({ reward: 0, metadata: { reason: "no_answer" } });
    for (const text of ["The answer is 18.5.", "The answer is 18 or 19.", "#### 19"]) expect((await reply(prose, text)).reward).toBe(0);
    expect(answerReadersFor(bareGold, { readers: ["hash"] })).toEqual(["hash"]);
  });

  it("an unknown reader on a task is an invalid_task abort that names the readers, never a 0", () => {
    const bad = Task.parse({ ...bareGold, metadata: { gold: "18", answer_readers: ["boxed", "guess"] } });
    expect(() => answerReadersFor(bad)).toThrow(EpisodeAbortError);
    expect(() => answerReadersFor(bad)).toThrow('has metadata.answer_readers ["boxed","guess"]: give a non-empty list of boxed, hash, final-answer, final-number');
  });
});

describe("math-agent", () => {
  it("scores a correct boxed answer 1.0 and sends the system prompt and the calculator tool", async () => {
    const { ctx, requests } = createTestContext({ reply: () => "So the profit is \\boxed{70,000}." });
    const out = await mathAgent.run(task, ctx);
    expect(out).toMatchObject({ reward: 1, is_success: true });
    expect(out.metadata).toMatchObject({ reason: "correct", extracted: "70,000", gold: "70000", turns: 1, stopped: "answer" });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.model).toBe(ctx.model);
    expect(requests[0]!.body.messages[1]).toEqual({ role: "user", content: task.main_query });
    expect(requests[0]!.body.tools?.[0]).toMatchObject({ type: "function", function: { name: "calculator" } });
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${ctx.episodes.default!.apiKey}`);
  });

  it("scores a wrong answer and a missing box 0.0", async () => {
    const wrong = createTestContext({ reply: () => "\\boxed{130000}" });
    expect(await mathAgent.run(task, wrong.ctx)).toMatchObject({ reward: 0, is_success: false, metadata: { reason: "wrong" } });
    const none = createTestContext({ reply: () => "The profit is 70000." });
    expect(await mathAgent.run(task, none.ctx)).toMatchObject({ reward: 0, metadata: { reason: "no_answer" } });
  });

  it("runs a calculator tool call round trip and answers on the next turn", async () => {
    const { ctx, requests } = createTestContext({
      reply: scriptedReplies(calc("(80000 + 50000) * 1.5"), calc("195000 - 130000"), "Profit: \\boxed{65000}"),
    });
    const gold65 = Task.parse({ ...task, metadata: { gold: 65000 } });
    const out = await mathAgent.run(gold65, ctx);
    expect(out).toMatchObject({ reward: 1, metadata: { turns: 3, tool_calls: 2, tool_errors: 0 } });
    const second = requests[1]!.body.messages;
    const assistant = second[2] as { role: string; tool_calls: { id: string }[] };
    expect(assistant.role).toBe("assistant");
    expect(second[3]).toEqual({ role: "tool", tool_call_id: assistant.tool_calls[0]!.id, content: "195000" });
    expect(requests[2]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: "65000" });
  });

  it("answers invalid tool-call JSON with an error tool message and goes on to the final answer", async () => {
    const { ctx, requests } = createTestContext({
      reply: scriptedReplies({ toolCalls: [{ name: "calculator", arguments: '{"expression": "1+' }] }, "\\boxed{70000}"),
    });
    const out = await mathAgent.run(task, ctx);
    expect(out).toMatchObject({ reward: 1, metadata: { turns: 2, tool_calls: 1, tool_errors: 1 } });
    const toolMessage = requests[1]!.body.messages.at(-1) as { role: string; content: string };
    expect(toolMessage.role).toBe("tool");
    expect(toolMessage.content).toMatch(/^Error: the arguments of calculator are not valid JSON/);
  });

  it("handles a call without id (synthesised, still run), without a name, and an unknown tool", async () => {
    const { ctx, requests } = createTestContext({
      reply: scriptedReplies(
        { toolCalls: [{ id: null, name: "calculator", arguments: { expression: "2*3" } }, { name: "" }, { name: "python", arguments: {} }] },
        "\\boxed{70000}",
      ),
    });
    await mathAgent.run(task, ctx);
    const messages = requests[1]!.body.messages;
    const calls = (messages[2] as { tool_calls: { id: string }[] }).tool_calls;
    expect(calls.map((c) => c.id)).toEqual(["call_1_0", "call_0_1", "call_0_2"]);
    expect(messages.slice(3).map((m) => (m as { content: string }).content)).toEqual([
      "6",
      "Error: the tool call has no function name",
      'Error: unknown tool "python"; available: calculator',
    ]);
  });

  it("BC-43 finish_reason length scores normally (no answer → 0.0); abort throws EpisodeAbortError", async () => {
    const cut = createTestContext({ reply: () => ({ content: "…therefore \\boxed{12", finishReason: "length" }) });
    expect(await mathAgent.run(task, cut.ctx)).toMatchObject({ reward: 0, metadata: { reason: "no_answer", stopped: "length" } });
    for (const guards of [true, false]) {
      const aborted = createTestContext({ guards, reply: () => ({ content: "Let me compute 3", finishReason: "abort" }) });
      await expect(mathAgent.run(task, aborted.ctx)).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "llm_aborted" });
    }
  });

  it("BC-38 an auth-error body aborts the episode instead of scoring it", async () => {
    const { ctx } = createTestContext({ reply: () => ({ status: 200, body: { status_code: 401, detail: "Invalid authorization data" } }) });
    const err = await mathAgent.run(task, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EpisodeAbortError);
    expect((err as EpisodeAbortError).reason).toBe("auth_error");
  });

  it("BC-44 every request starts with an explicit system message, across turns", async () => {
    const { ctx, requests } = createTestContext({ reply: scriptedReplies(calc("1+1"), calc("2+2"), calc("3+3"), calc("4+4")) });
    const out = await runMathAgent(task, ctx, { maxTurns: 3 });
    expect(out.metadata).toMatchObject({ turns: 3, stopped: "max_turns", reason: "no_answer" });
    expect(requests).toHaveLength(3);
    for (const r of requests) expect(r.body.messages[0]?.role).toBe("system");
  });

  it("BC-04 the system prompt's \\boxed{} never scores; only the final assistant message does", async () => {
    const { ctx, requests } = createTestContext({ reply: () => "The answer is 70000." });
    const out = await mathAgent.run(task, ctx);
    expect(String(requests[0]!.body.messages[0]?.content)).toContain("\\boxed{}");
    expect(out).toMatchObject({ reward: 0, metadata: { reason: "no_answer" } });
  });

  it("refuses a task without gold before any LLM call", async () => {
    const { ctx, requests } = createTestContext({ reply: () => "\\boxed{1}" });
    const bad = Task.parse({ task_id: "t", main_query: "q", metadata: { answer: "no marker" } });
    await expect(mathAgent.run(bad, ctx)).rejects.toMatchObject({ reason: "invalid_task" });
    expect(requests).toHaveLength(0);
    expect(mathGold(Task.parse({ metadata: { gold: "\\frac{1}{2}" } }))).toBe("\\frac{1}{2}");
  });
});

describe("math-agent seed signature", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("runAgentAndComputeReward works as a v1 function through fromAgentRun", async () => {
    const harness = createTestContext({ reply: () => "\\boxed{70000}" });
    vi.stubGlobal("fetch", harness.fetch);
    const fn = fromAgentRun("math-agent-seed", runAgentAndComputeReward);
    const out = await fn.run(task, harness.ctx);
    expect(out).toMatchObject({ reward: 1, is_success: true });
    expect(harness.requests).toHaveLength(1);
    expect(harness.requests[0]!.headers.authorization).toBe(`Bearer ${harness.ctx.episodes.default!.apiKey}`);
    expect(harness.requests[0]!.body.messages[0]?.role).toBe("system");
  });
});

describeShared("math-agent on GSM8K rows", () => {
  it("reads the gold of the first 50 test rows and scores the boxed gold 1.0 each", async () => {
    const rows = readFileSync(sharedPath("data/gsm8k/test.jsonl"), "utf8").split("\n").filter(Boolean).slice(0, 50);
    for (const [i, line] of rows.entries()) {
      const row = JSON.parse(line) as { question: string; answer: string };
      const gold = parseGsm8kGold(row.answer);
      expect(gold, `row ${i}`).not.toBeNull();
      const t = Task.parse({ task_id: `gsm8k:test:${i}`, main_query: row.question, metadata: { answer: row.answer } });
      const { ctx } = createTestContext({ reply: () => `… so the answer is \\boxed{${gold}}.` });
      expect((await mathAgent.run(t, ctx)).reward, `row ${i}`).toBe(1);
    }
  });
});

describe("math-agent outputs on the wire", () => {
  it("BC-22 every output is one finite reward that survives JSON, whatever the model sends", async () => {
    const { assertValidWorkflowOutput } = await import("../../../src/protocol/index.ts");
    const countdownFn = (await import("../../../functions/countdown.ts")).default;
    const cd = Task.parse({ task_id: "c", metadata: { target: 5, nums: [3, 3, 5] } });
    const replies = ["\\boxed{", "\\boxed{" + "\\frac{".repeat(20_000), "<answer>5/(3-3)</answer>", "<answer>9**9**9</answer>", ""];
    for (const reply of replies) {
      for (const [fn, t] of [[mathAgent, task], [countdownFn, cd]] as const) {
        const { ctx } = createTestContext({ reply: () => reply });
        const out = await fn.run(t, ctx);
        const valid = assertValidWorkflowOutput(out);
        expect(JSON.parse(JSON.stringify(valid)).reward).toBe(valid.reward);
      }
    }
  });

  it("BC-42 the seed-style client never retries and times out a little above the proxy's 300 s", async () => {
    const { seedClient, SWARM_LLM_TIMEOUT_MS } = await import("../../../src/sdk/chat.ts");
    const client = seedClient("http://default.swarm.test/v1", "sk-ajet-x");
    expect(client.maxRetries).toBe(0);
    expect(client.timeout).toBe(SWARM_LLM_TIMEOUT_MS);
    expect(SWARM_LLM_TIMEOUT_MS).toBeGreaterThan(300_000);
  });
});
