/** @module test/unit/tasks/field-maps — per-kind field maps and gold extraction (BC-10, BC-54, BC-58). */
import { describe, expect, it } from "vitest";
import { parseGsm8kGold } from "../../../src/rewards/index.ts";
import {
  buildCountdownPrompt,
  lastBoxedContent,
  parseTasks,
  tasksFromObjects,
  toSafeInteger,
} from "../../../src/tasks/index.ts";

const jsonl = (...rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join("\n");

describe("GSM8K (BC-10)", () => {
  const josh = "Cost 80,000+50,000=$<<80000+50000=130000>>130,000\nProfit 200,000-130,000=$<<200000-130000=70000>>70,000\n#### 70000";

  it("BC-10 gold is the text after the last ####, trimmed, without commas and $", () => {
    expect(parseGsm8kGold(josh)).toBe("70000");
    expect(parseGsm8kGold("a #### 1\n#### $1,234 ")).toBe("1234");
    expect(parseGsm8kGold("#### -3")).toBe("-3");
  });

  it("BC-10 maps question → main_query, keeps the raw answer and the gold in metadata", () => {
    const { tasks, report } = parseTasks(jsonl({ question: "Josh flips a house…", answer: josh }), {
      name: "gsm8k",
      kind: "gsm8k",
      split: "test",
    });
    expect(report).toEqual({ name: "gsm8k", split: "test", accepted: 1, rejected: [] });
    expect(tasks[0]).toEqual({
      main_query: "Josh flips a house…",
      init_messages: [],
      task_id: "gsm8k:test:0",
      env_type: "no_env",
      metadata: { answer: josh, gold: "70000" },
    });
  });

  it("BC-10 a row without #### is flagged at load: rejected and counted with its line", () => {
    const text = jsonl(
      { question: "q1", answer: "#### 1" },
      { question: "q2", answer: "the answer is 2" },
      { question: "q3", answer: "####   " },
      { question: "q4", answer: "#### 4" },
    );
    const { tasks, report } = parseTasks(text, { name: "gsm8k", kind: "gsm8k" });
    expect(tasks.map((t) => t.metadata["gold"])).toEqual(["1", "4"]);
    expect(report.accepted).toBe(2);
    expect(report.rejected.map((r) => r.line)).toEqual([2, 3]);
    expect(report.rejected[0]!.reason).toBe(
      "no gold answer: `answer` has no `#### <answer>` line (got \"the answer is 2\"): a GSM8K answer ends with a line like `#### 18`",
    );
  });
});

describe("MATH (BC-54)", () => {
  it("BC-54 problem → main_query, gold from the last \\boxed{} of solution", () => {
    const { tasks } = parseTasks(jsonl({ problem: "What is 2+3?", solution: "2+3 = \\boxed{4}? no: \\boxed{5}" }), {
      name: "math",
      kind: "math",
    });
    expect(tasks[0]!.main_query).toBe("What is 2+3?");
    expect(tasks[0]!.metadata["gold"]).toBe("5");
    expect(tasks[0]!.metadata["solution"]).toBe("2+3 = \\boxed{4}? no: \\boxed{5}");
    expect(tasks[0]!.task_id).toBe("math:train:0");
  });

  it("BC-54 an `answer` column wins over the solution's box", () => {
    const { tasks } = tasksFromObjects([{ problem: "p", solution: "\\boxed{6/12}", answer: "\\frac{1}{2}" }], {
      name: "math500",
      kind: "math",
      split: "test",
    });
    expect(tasks[0]!.metadata["gold"]).toBe("\\frac{1}{2}");
  });

  it("BC-54 rows with a missing or empty query, or no gold, are rejected and counted", () => {
    const text = jsonl(
      { problem: "", solution: "\\boxed{1}" },
      { question: "wrong column", solution: "\\boxed{1}" },
      { problem: "   ", solution: "\\boxed{1}" },
      { problem: "no box", solution: "it is 5" },
      { problem: "truncated", solution: "so \\boxed{12" },
      { problem: "ok", solution: "\\boxed{7}" },
    );
    const { tasks, report } = parseTasks(text, { name: "math", kind: "math" });
    expect(tasks.map((t) => t.main_query)).toEqual(["ok"]);
    expect(tasks[0]!.task_id).toBe("math:train:5");
    expect(report.accepted).toBe(1);
    expect(report.rejected.map((r) => r.line)).toEqual([1, 2, 3, 4, 5]);
    expect(report.rejected[0]!.reason).toContain("missing or empty query");
    expect(report.rejected[1]!.reason).toContain("`problem` (missing)");
    expect(report.rejected[3]!.reason).toContain("no gold answer");
  });
});

describe("balanced \\boxed{} gold extraction (BC-01, BC-03)", () => {
  it.each([
    ["so the probability is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"],
    ["\\boxed{2^{10}}", "2^{10}"],
    ["\\boxed{\\text{(B)}}", "\\text{(B)}"],
    ["first \\boxed{1} then \\boxed{ 2 }", "2"],
    ["answer: \\boxed 5$", "5"],
    ["answer: \\fbox{7}", "7"],
    ["set \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"],
  ])("%s → %s", (text, gold) => {
    expect(lastBoxedContent(text)).toBe(gold);
  });

  it.each([["…therefore \\boxed{12"], ["\\boxed{}"], ["no box at all"], ["\\boxed{1} and later \\boxed{2"]])(
    "%s → null (flagged, never a wrong gold)",
    (text) => {
      expect(lastBoxedContent(text)).toBeNull();
    },
  );
});

describe("Countdown (BC-58)", () => {
  it("BC-58 BigInt target and nums become Numbers; the metadata survives JSON", () => {
    const { tasks, report } = tasksFromObjects([{ target: 24n, nums: [8n, 3n, 8n, 3n], id_col: 7n }], {
      name: "countdown",
      kind: "countdown",
    });
    expect(report.rejected).toEqual([]);
    expect(tasks[0]!.metadata).toEqual({ target: 24, nums: [8, 3, 8, 3], id_col: 7 });
    expect(typeof tasks[0]!.metadata["target"]).toBe("number");
    expect(JSON.parse(JSON.stringify(tasks[0]))).toEqual(tasks[0]);
    expect(tasks[0]!.main_query).toBe(buildCountdownPrompt({ target: 24, nums: [8, 3, 8, 3] }));
  });

  it("BC-58 an unsafe integer is rejected, never rounded", () => {
    const { tasks, report } = tasksFromObjects(
      [
        { target: 2n ** 53n, nums: [1, 2] },
        { target: 10, nums: [1n, 9007199254740993n] },
        { target: 24.5, nums: [1, 2] },
        { target: "24", nums: ["8", 3, 8, 3] },
        { target: 5, nums: [] },
      ],
      { name: "countdown", kind: "countdown" },
    );
    expect(tasks.map((t) => t.metadata["target"])).toEqual([24]);
    expect(tasks[0]!.metadata["nums"]).toEqual([8, 3, 8, 3]);
    expect(report.rejected).toEqual([
      { line: 1, reason: "target is not a safe integer (beyond ±2^53-1, got 9007199254740992)" },
      { line: 2, reason: "nums[1] is not a safe integer (beyond ±2^53-1, got 9007199254740993)" },
      { line: 3, reason: "target is not an integer (got 24.5)" },
      { line: 5, reason: "countdown rows need a non-empty array `nums` (got [])" },
    ]);
  });

  it("BC-58 toSafeInteger accepts safe numbers, BigInts and decimal strings only", () => {
    expect(toSafeInteger(-7n, "x")).toBe(-7);
    expect(toSafeInteger(" 42 ", "x")).toBe(42);
    expect(() => toSafeInteger("0x1A", "x")).toThrow("x must be an integer");
    expect(() => toSafeInteger(Number.NaN, "x")).toThrow("x is not an integer (got NaN)");
  });

  it("the prompt asks for the equation inside <answer> tags, each number once", () => {
    const prompt = buildCountdownPrompt({ target: 80, nums: [25, 5, 4] });
    expect(prompt).toContain("Using the numbers [25, 5, 4], create an equation that equals 80.");
    expect(prompt).toContain("each number exactly once");
    expect(prompt).toContain("<answer>(25-5)*4</answer>");
  });
});

describe("generic rows (the reference JSONL reader's columns)", () => {
  it("maps main_query / init_messages / env_type / metadata", () => {
    const { tasks } = parseTasks(
      jsonl(
        { main_query: "hi", metadata: { k: 1 } },
        { init_messages: [{ role: "user", content: "chat" }], env_type: "shell", extra: true },
      ),
      { name: "mine", kind: "generic" },
    );
    expect(tasks[0]).toMatchObject({ main_query: "hi", env_type: "no_env", metadata: { k: 1 }, init_messages: [] });
    expect(tasks[1]).toMatchObject({
      main_query: "",
      env_type: "shell",
      init_messages: [{ role: "user", content: "chat" }],
      metadata: { extra: true },
    });
  });

  it("rejects rows with no query, a bad init_messages or a non-object metadata", () => {
    const { report } = tasksFromObjects(
      [{ main_query: "" }, { main_query: "q", init_messages: ["x"] }, { main_query: "q", metadata: [1] }, {}],
      { name: "mine", kind: "generic" },
    );
    expect(report.accepted).toBe(0);
    expect(report.rejected.map((r) => r.reason)).toEqual([
      "missing or empty query: generic rows need `main_query` or `init_messages`",
      '`init_messages` must be a list of message objects (got ["x"])',
      "`metadata` must be an object (got [1])",
      "missing or empty query: generic rows need `main_query` or `init_messages`",
    ]);
  });
});
