/** @module test/unit/functions/countdown — the Countdown function end to end through createTestContext. */
import { describe, expect, it } from "vitest";
import countdown, { countdownPuzzle } from "../../../functions/countdown.ts";
import { createTestContext } from "../../../src/sdk/testing.ts";
import { Task } from "../../../src/protocol/index.ts";
import { buildCountdownPrompt } from "../../../src/tasks/countdown-prompt.ts";

const task = Task.parse({ task_id: "countdown:0", metadata: { target: 24, nums: [8, 3, 8, 3] } });

describe("countdown function", () => {
  it("BC-18 scores a correct equation 1.0 and prompts with the shared builder after a system message", async () => {
    const { ctx, requests } = createTestContext({ reply: () => "Try: <answer>8/(3-8/3)</answer>" });
    const out = await countdown.run(task, ctx);
    expect(out).toMatchObject({ reward: 1, is_success: true, metadata: { equation: "8/(3-8/3)", reason: "correct" } });
    const messages = requests[0]!.body.messages;
    expect(messages[0]?.role).toBe("system");
    expect(messages[1]).toEqual({ role: "user", content: buildCountdownPrompt({ target: 24, nums: [8, 3, 8, 3] }) });
  });

  it("BC-17 gives 0.1 to a well-formed wrong equation and 0.0 without an answer", async () => {
    const wrong = createTestContext({ reply: () => "<answer>8*3</answer>" });
    expect(await countdown.run(task, wrong.ctx)).toMatchObject({ reward: 0.1, metadata: { reason: "wrong_numbers" } });
    const none = createTestContext({ reply: () => "I cannot solve it." });
    expect(await countdown.run(task, none.ctx)).toMatchObject({ reward: 0, metadata: { reason: "no_answer" } });
  });

  it("BC-19 refuses ** with the format score inside the function too", async () => {
    const t = Task.parse({ task_id: "c:9", metadata: { target: 729, nums: [9, 9, 9] } });
    const { ctx } = createTestContext({ reply: () => "<answer>9**9**9</answer>" });
    expect(await countdown.run(t, ctx)).toMatchObject({ reward: 0.1, metadata: { reason: "operator_not_allowed" } });
  });

  it("BC-43 finish_reason length scores normally; abort throws", async () => {
    const cut = createTestContext({ reply: () => ({ content: "<answer>8/(3-8", finishReason: "length" }) });
    expect(await countdown.run(task, cut.ctx)).toMatchObject({ reward: 0, metadata: { finish_reason: "length" } });
    const aborted = createTestContext({ reply: () => ({ content: "8", finishReason: "abort" }) });
    await expect(countdown.run(task, aborted.ctx)).rejects.toMatchObject({ reason: "llm_aborted" });
  });

  it("reads BigInt and string numbers (BC-58) and refuses a bad task before calling the LLM", async () => {
    const big = Task.parse({ task_id: "c:b", metadata: { target: 24n, nums: [8n, "3", 8, 3n] } });
    expect(countdownPuzzle(big)).toEqual({ target: 24, nums: [8, 3, 8, 3] });
    const { ctx, requests } = createTestContext({ reply: () => "<answer>1</answer>" });
    for (const metadata of [{ target: 24 }, { target: 2.5, nums: [1] }, { target: 24, nums: [] }]) {
      await expect(countdown.run(Task.parse({ task_id: "bad", metadata }), ctx)).rejects.toMatchObject({
        name: "EpisodeAbortError",
        reason: "invalid_task",
      });
    }
    expect(requests).toHaveLength(0);
  });
});
