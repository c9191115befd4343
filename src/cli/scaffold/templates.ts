/**
 * @module cli/scaffold/templates — the files `ajet-edge new NAME` writes: a working rollout function on contract v1
 * (one LLM call, system prompt first, answer in `\boxed{}` scored exactly by `src/rewards`), its unit test through
 * `createTestContext`, and its README subsection. The seed's write-swarm-client skill, as files. Pure.
 */

/** What the templates need: the kebab-case name and the identifier the registry imports it as. */
export interface TemplateNames {
  name: string;
  identifier: string;
}

/** `functions/NAME.ts`: agent and reward, no TODOs; typechecks in workerd and Node. */
export function functionSource({ name }: TemplateNames): string {
  return `/**
 * @module functions/${name} — scaffolded by \`ajet-edge new ${name}\`: one LLM call with an explicit system prompt
 * (BC-44), then the last \`\\boxed{}\` of the reply compared exactly with the task's gold answer by
 * \`scoreMathAnswer\` (src/rewards): reward 1.0 when equal, else 0.0. Make it yours: change the prompt, add turns
 * or tools, or swap the reward (keep it one finite number, BC-22). Guide: docs/writing-functions.md.
 */
import { completeChat, initialMessages } from "../src/functions/chat.ts";
import { defineRolloutFunction, EpisodeAbortError } from "../src/functions/contract.ts";
import type { Task } from "../src/protocol/index.ts";
import { messageText, parseGsm8kGold, scoreMathAnswer } from "../src/rewards/index.ts";

/** The system prompt sent first on every request (BC-44: without one the server injects its own). */
export const SYSTEM_PROMPT =
  "You are a careful problem solver. Think step by step, then give the final answer within \\\\boxed{}.";

/**
 * The task's gold answer: \`metadata.gold\`, else \`metadata.answer\` (the \`#### N\` tail of a GSM8K answer, or the
 * whole value).
 * @throws EpisodeAbortError \`invalid_task\` when there is neither — a data error, never scored as 0
 */
export function goldAnswer(task: Task): string {
  for (const value of [task.metadata.gold, task.metadata.answer]) {
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    if (typeof value === "string" && value.trim() !== "") return parseGsm8kGold(value) ?? value.trim();
  }
  const id = JSON.stringify(task.task_id);
  throw new EpisodeAbortError("invalid_task", \`task \${id} has no metadata.gold or metadata.answer\`);
}

export default defineRolloutFunction({
  name: "${name}",
  description: "One LLM call; reward 1.0 when the last \\\\boxed{} equals the task's gold answer, else 0.0",
  async run(task, ctx) {
    const gold = goldAnswer(task);
    const turn = await completeChat(ctx, { messages: initialMessages(task, SYSTEM_PROMPT) });
    const score = scoreMathAnswer(messageText(turn.message.content), gold);
    return {
      reward: score.reward,
      is_success: score.isSuccess,
      metadata: { extracted: score.extracted, reason: score.reason, gold, finish_reason: turn.finishReason },
    };
  },
});
`;
}

/** `test/unit/functions/NAME.test.ts`: a correct reply → 1.0, a wrong one → 0.0, BC-44, bad task, registry. */
export function testSource({ name, identifier }: TemplateNames): string {
  return `/** @module test/unit/functions/${name} — the scaffolded ${name} function through createTestContext. */
import { describe, expect, it } from "vitest";
import { rolloutFunctions } from "../../../functions/index.ts";
import ${identifier}, { goldAnswer } from "../../../functions/${name}.ts";
import { createTestContext } from "../../../src/functions/testing.ts";
import { Task } from "../../../src/protocol/index.ts";

const task = Task.parse({ task_id: "demo:train:0", main_query: "What is 6 times 7?", metadata: { gold: "42" } });

describe("${name}", () => {
  it("scores a correct boxed answer 1.0 and sends a system message first (BC-44)", async () => {
    const { ctx, requests } = createTestContext({ reply: () => "6 times 7 is 42, so the answer is \\\\boxed{42}." });
    expect(await ${identifier}.run(task, ctx)).toMatchObject({ reward: 1, is_success: true, metadata: { reason: "correct" } });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.messages[0]?.role).toBe("system");
    expect(requests[0]!.body.messages[1]).toEqual({ role: "user", content: task.main_query });
  });

  it("scores a wrong answer 0.0 and a reply without a box 0.0", async () => {
    const wrong = createTestContext({ reply: () => "The answer is \\\\boxed{48}." });
    expect(await ${identifier}.run(task, wrong.ctx)).toMatchObject({ reward: 0, is_success: false, metadata: { reason: "wrong" } });
    const none = createTestContext({ reply: () => "It is 42." });
    expect(await ${identifier}.run(task, none.ctx)).toMatchObject({ reward: 0, metadata: { reason: "no_answer" } });
  });

  it("reads a GSM8K-style gold and refuses a task without one before calling the LLM", async () => {
    expect(goldAnswer(Task.parse({ metadata: { answer: "6*7=42\\n#### 42" } }))).toBe("42");
    const { ctx, requests } = createTestContext({ reply: () => "\\\\boxed{42}" });
    await expect(${identifier}.run(Task.parse({ task_id: "bad" }), ctx)).rejects.toMatchObject({ reason: "invalid_task" });
    expect(requests).toHaveLength(0);
  });

  it("is registered in functions/index.ts under its name", () => {
    expect(rolloutFunctions["${name}"]).toBe(${identifier});
    expect(${identifier}.name).toBe("${name}");
  });
});
`;
}

/** The README subsection (`### NAME`). */
export function readmeSection({ name }: TemplateNames): string {
  return `### ${name}

\`functions/${name}.ts\` (scaffolded by \`ajet-edge new ${name}\`): one LLM call; reward 1.0 when the last
\`\\boxed{}\` of the reply equals the task's gold answer (\`metadata.gold\`, or a GSM8K \`metadata.answer\`), else 0.0.

- test: \`npx vitest run --project unit test/unit/functions/${name}.test.ts\`
- run locally: \`ajet-edge dev --function ${name}\`
- how to change it: [docs/writing-functions.md](docs/writing-functions.md)
`;
}
