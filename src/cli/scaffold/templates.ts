/**
 * @module cli/scaffold/templates — the files `ajet-edge new NAME` writes: a working rollout function on contract v1
 * (one LLM call, system prompt first, answer in `\boxed{}` scored exactly by the package's rewards), and its unit test
 * through `createTestContext`. Both import the public entries (`ajet-edge`, `ajet-edge/testing`), in this repository
 * and in a user's project alike. The seed's write-swarm-client skill, as files. Pure.
 */

/** What the templates need: the kebab-case name, the identifier the registry imports it as, and where the test lives. */
export interface TemplateNames {
  name: string;
  identifier: string;
  /** the test file's path from the project root, `/`-separated (`test/my-agent.test.ts`); default this repository's layout */
  testFile?: string;
}

/**
 * The scaffold's demo tasks as generic rows: small arithmetic word problems written for this project, each with its
 * answer in `metadata.gold` (what the emulator's answer key is derived from, `answerKeyFor`).
 */
export const DEMO_ROWS: readonly { main_query: string; metadata: { gold: string } }[] = [
  { main_query: "A baker makes 4 trays of 9 muffins and sells 13 of them. How many muffins are left?", metadata: { gold: "23" } },
  { main_query: "Tom reads 12 pages every day. How many pages does he read in 2 weeks?", metadata: { gold: "168" } },
  { main_query: "A bus has 40 seats and 26 of them are taken. How many seats are free?", metadata: { gold: "14" } },
  { main_query: "Mia buys 3 notebooks at 4 dollars each and a pen at 5 dollars. How many dollars does she spend?", metadata: { gold: "17" } },
  { main_query: "A garden has 6 rows of 8 tulips, and half of the tulips are red. How many tulips are red?", metadata: { gold: "24" } },
  { main_query: "A train goes 60 km per hour for 3 hours, then 45 km more. How many km does it go in all?", metadata: { gold: "225" } },
  { main_query: "Sam shares 50 marbles equally among 5 friends. How many marbles does each friend get?", metadata: { gold: "10" } },
  { main_query: "A shop sells 7 bikes on Monday and twice as many on Tuesday. How many bikes does it sell in the two days?", metadata: { gold: "21" } },
];

/** The demo rows as TypeScript source lines of the `DEMO_TASKS` array. */
function demoTaskLines(): string {
  return DEMO_ROWS.map((r) => `  { main_query: ${JSON.stringify(r.main_query)}, metadata: { gold: ${JSON.stringify(r.metadata.gold)} } },`).join("\n");
}

/** `functions/NAME.ts`: agent, reward and demo tasks, no TODOs; typechecks in workerd and Node. */
export function functionSource({ name }: TemplateNames): string {
  return `/**
 * @module functions/${name} — scaffolded by \`ajet-edge new ${name}\`: one LLM call with an explicit system prompt
 * (without one the swarm server injects its own), then the last \`\\boxed{}\` of the reply compared exactly with the task's gold answer by
 * \`scoreMathAnswer\` (ajet-edge): reward 1.0 when equal, else 0.0. \`DEMO_TASKS\` are what
 * \`npm start -- --function ${name}\` runs on when no \`--dataset\` is given. Make it yours: change the prompt, add
 * turns or tools, swap the reward (keep it one finite number: NaN, null or a list aborts the episode), replace the demo tasks. Guide:
 * docs/writing-functions.md of the ajet-edge package.
 */
import {
  completeChat,
  defineRolloutFunction,
  EpisodeAbortError,
  initialMessages,
  messageText,
  parseGsm8kGold,
  scoreMathAnswer,
  type Task,
} from "ajet-edge";

/** The system prompt sent first on every request (without one the server injects its own). */
export const SYSTEM_PROMPT =
  "You are a careful problem solver. Think step by step, then give the final answer within \\\\boxed{}.";

/**
 * Demo tasks: generic rows \`{ main_query, metadata: { gold } }\` that \`ajet-edge dev --function ${name}\` runs on
 * without \`--dataset\` (the local emulator's simulated policy learns their answers from \`metadata.gold\`). Real
 * data comes from a file: \`npm start -- --function ${name} --dataset PATH.jsonl --kind gsm8k\` (or \`generic\`).
 */
export const DEMO_TASKS = [
${demoTaskLines()}
];

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
  demo: { kind: "generic", rows: DEMO_TASKS },
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

/** This repository's test path of a function (a project made by `ajet-edge init` keeps its tests in `test/`). */
export function defaultTestFile(name: string): string {
  return `test/unit/functions/${name}.test.ts`;
}

/** The test of `functions/NAME.ts`: a correct reply → 1.0, a wrong one → 0.0, system message first, bad task, registry, demo. */
export function testSource({ name, identifier, testFile = defaultTestFile(name) }: TemplateNames): string {
  const up = "../".repeat(testFile.split("/").length - 1);
  return `/** @module ${testFile.replace(/\.ts$/, "")} — the scaffolded ${name} function through createTestContext. */
import { Task, tasksFromObjects } from "ajet-edge";
import { createTestContext } from "ajet-edge/testing";
import { describe, expect, it } from "vitest";
import { rolloutFunctions } from "${up}functions/index.ts";
import ${identifier}, { DEMO_TASKS, goldAnswer } from "${up}functions/${name}.ts";

const task = Task.parse({ task_id: "demo:train:0", main_query: "What is 6 times 7?", metadata: { gold: "42" } });

describe("${name}", () => {
  it("scores a correct boxed answer 1.0 and sends a system message first", async () => {
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

  it("has demo tasks that load as generic tasks and score 1.0 with their gold answer", async () => {
    expect(${identifier}.demo).toEqual({ kind: "generic", rows: DEMO_TASKS });
    const { tasks, report } = tasksFromObjects(DEMO_TASKS, { name: "${name}-demo", kind: "generic" });
    expect(report.rejected).toEqual([]);
    expect(tasks).toHaveLength(DEMO_TASKS.length);
    for (const demoTask of tasks) {
      const gold = goldAnswer(demoTask);
      const { ctx } = createTestContext({ reply: () => \`The answer is \\\\boxed{\${gold}}.\` });
      expect(await ${identifier}.run(demoTask, ctx)).toMatchObject({ reward: 1, is_success: true });
    }
  });
});
`;
}
