/**
 * The simulated policy (a simulator, not a model): determinism for a seed, p rising at weight syncs, the answer
 * key formats (canonical, raw GSM8K with BC-10 gold parsing, raw Countdown), wrong and malformed replies, tool
 * arguments and latency.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AnswerKeyStore, DEFAULT_POLICY, SimulatedPolicy, loadAnswerKeyFile, type PolicyOptions } from "../../../src/emulator/index.ts";
import { parseGsm8kGold } from "../../../src/rewards/index.ts";
import { evaluateEquation, solveCountdown } from "../../../src/emulator/policy/countdown.ts";
import { buildToolCall } from "../../../src/emulator/policy/tools.ts";
import { sampleLatencyMs } from "../../../src/emulator/latency.ts";
import { createRng } from "../../../src/emulator/rng.ts";
import { describeShared, sharedPath } from "../../support/shared.ts";
import { advanceUntil, bootToRolling, chat, claim, end, makeEmulator } from "./helpers.ts";

const policyWith = (knobs: Partial<PolicyOptions> = {}, seed = 1, key = new AnswerKeyStore()) =>
  new SimulatedPolicy({ ...DEFAULT_POLICY, ...knobs }, seed, key, { kind: "fixed", ms: 0 });
const ask = (text: string, episodeUuid = "e1", callIndex = 1) => ({ messages: [{ role: "user", content: text }], episodeUuid, callIndex });

describe("determinism", () => {
  it("gives identical replies for the same seed and requests, different ones for another seed", () => {
    const requests = Array.from({ length: 30 }, (_, i) => ask(`What is ${i} + ${2 * i}? Use \\boxed{}.`, `ep${i % 7}`, (i % 3) + 1));
    const run = (seed: number) => requests.map((r) => policyWith({}, seed).respond(r).content);
    expect(run(5)).toEqual(run(5));
    expect(run(5)).not.toEqual(run(6));
  });

  it("an emulator with the same seed registers the same episode uuids", async () => {
    const uuids = async (seed: number) => {
      const { emu, clock } = makeEmulator({ seed });
      await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 4 });
      const q = [...emu.engine.queue];
      emu.close();
      return q;
    };
    expect(await uuids(3)).toEqual(await uuids(3));
    expect(await uuids(3)).not.toEqual(await uuids(4));
  });
});

describe("learning", () => {
  it("p ← min(pMax, p + lr · meanReward · (1 − p)) at each weight sync", () => {
    const q = policyWith({ initialAccuracy: 0.25, learningRate: 0.5 });
    expect(q.learn(0.5)).toEqual({ meanReward: 0.5, before: 0.25, after: 0.25 + 0.5 * 0.5 * 0.75 });
    expect(q.learn(0).after).toBe(q.history[0]?.after);
    const capped = policyWith({ initialAccuracy: 0.25, learningRate: 1, maxAccuracy: 0.6 });
    expect(capped.learn(1).after).toBe(0.6);
  });

  it("rises after a weight sync with positive rewards, from the step's mean reward", async () => {
    const { emu, clock } = makeEmulator({ seed: 11 });
    await bootToRolling(emu, clock, { batchSize: 1, numRepeat: 2 });
    for (const reward of [1, 0]) {
      const c = await claim(emu);
      await chat(emu, c.openai_api_key);
      await end(emu, c.episode_uuid, "t", reward);
    }
    await advanceUntil(clock, () => emu.engine.globalStep === 2 && emu.engine.status === "ENGINE.ROLLING");
    expect(emu.policy.history).toEqual([{ meanReward: 0.5, before: 0.25, after: 0.25 + 0.5 * 0.75 }]);
    expect(emu.policy.accuracy).toBeGreaterThan(0.25);
    emu.close();
  });

  it("makes a 3-step run's mean reward climb from step 1 to step 3", async () => {
    const { emu, clock } = makeEmulator({ seed: 2 });
    await bootToRolling(emu, clock, { batchSize: 8, numRepeat: 4, maxEnvWorker: 32 });
    for (let step = 1; step <= 3; step++) {
      for (let task = 0; task < 8; task++) {
        for (let r = 0; r < 4; r++) {
          const a = 10 + task;
          const b = 20 + step;
          const c = await claim(emu);
          const res = await chat(emu, c.openai_api_key, { messages: [{ role: "user", content: `What is ${a} + ${b}? Put the final integer answer in \\boxed{}.` }] });
          const reward = res.json.choices[0].message.content.includes(`\\boxed{${a + b}}`) ? 1 : 0;
          await end(emu, c.episode_uuid, `s${step}-t${task}`, reward);
        }
      }
      await advanceUntil(clock, () => emu.engine.globalStep === step + 1 && emu.engine.status === "ENGINE.ROLLING");
    }
    const means = emu.stepLog.map((s) => s.meanReward ?? 0);
    expect(means).toHaveLength(3);
    expect(means[2]! - means[0]!).toBeGreaterThan(0.2);
    expect(emu.policy.history.map((h) => h.after)).toEqual([...emu.policy.history.map((h) => h.after)].sort());
    emu.close();
  });
});

describe("answer key", () => {
  it("canonical entries: boxed and answer-tag, correct / wrong / malformed", () => {
    const key = new AnswerKeyStore();
    key.add([
      { match: "How many apples does Ann have?", answer: "12", format: "boxed" },
      { match: "Reach 24 with the cards", answer: "(8-2)*4", format: "answer-tag" },
    ]);
    const right = policyWith({ initialAccuracy: 1 }, 1, key);
    expect(right.respond(ask("Ann buys fruit.  How many apples\ndoes Ann have?")).content).toMatch(/\\boxed\{12\}$/);
    expect(right.respond(ask("Reach 24 with the cards 8 2 4")).content).toMatch(/<answer>\(8-2\)\*4<\/answer>$/);
    const wrong = policyWith({ initialAccuracy: 0, malformedRate: 0 }, 1, key);
    const w = wrong.respond(ask("How many apples does Ann have?")).content;
    expect(w).toMatch(/\\boxed\{-?\d+\}$/);
    expect(w).not.toContain("\\boxed{12}");
    const malformed = policyWith({ initialAccuracy: 0, malformedRate: 1 }, 1, key);
    expect(malformed.respond(ask("How many apples does Ann have?")).content).not.toContain("\\boxed");
    expect(malformed.respond(ask("Reach 24 with the cards")).content).not.toContain("<answer>");
  });

  it("BC-10 raw GSM8K rows: gold after the last ####, commas and $ removed; a row without #### is refused", () => {
    expect(parseGsm8kGold("Cost 80,000+50,000=$<<80000+50000=130000>>130,000\n#### $70,000")).toBe("70000");
    const key = new AnswerKeyStore();
    key.add([{ question: "What does the house cost?", answer: "Cost 80,000+50,000=$<<80000+50000=130000>>130,000\n#### 70,000" }]);
    expect(policyWith({ initialAccuracy: 1 }, 1, key).respond(ask("Q: What does the house cost?")).content).toMatch(/\\boxed\{70000\}$/);
    expect(() => key.add([{ question: "q", answer: "no marker" }])).toThrow(/answer key row 0: gsm8k row has no '####' gold answer/);
  });

  it("raw Countdown rows are auto-detected: the reply's equation uses every number once", () => {
    const key = new AnswerKeyStore();
    key.add([{ target: 98, nums: [44, 19, 35] }]);
    const prompt = "Using the numbers [44, 19, 35], create an equation that equals 98. Show your work in <answer> </answer> tags.";
    const equationIn = (text: string) => /<answer>(.*)<\/answer>/.exec(text)?.[1] ?? "";
    const numbersOf = (eq: string) => (eq.match(/\d+/g) ?? []).map(Number).sort((a, b) => a - b);
    const correct = equationIn(policyWith({ initialAccuracy: 1 }, 1, key).respond(ask(prompt)).content);
    expect(evaluateEquation(correct)).toBe(98);
    expect(numbersOf(correct)).toEqual([19, 35, 44]);
    const wrong = equationIn(policyWith({ initialAccuracy: 0, malformedRate: 0 }, 1, key).respond(ask(prompt)).content);
    expect(evaluateEquation(wrong)).not.toBe(98);
    expect(numbersOf(wrong)).toEqual([19, 35, 44]);
    expect(policyWith({ initialAccuracy: 1 }, 1, key).respond(ask("Using [44, 19], reach 98")).task).toBe("generic"); // 35 missing
  });

  it("replies with plausible generic text when nothing matches", () => {
    const reply = policyWith().respond(ask("Tell me about the weather."));
    expect(reply).toMatchObject({ task: "generic", outcome: "generic", toolCalls: null });
    expect(reply.content.length).toBeGreaterThan(40);
  });

  const tempDirs: string[] = [];
  afterEach(() => {
    for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("loads a JSONL file and names a bad line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ajet-emu-"));
    tempDirs.push(dir);
    const good = join(dir, "good.jsonl");
    writeFileSync(good, ['{"match": "m1", "answer": "1", "format": "boxed"}', "", '{"target": 24, "nums": [8, 2, 4], "solution": "(8-2)*4"}'].join("\n"));
    expect((await loadAnswerKeyFile(good)).map((e) => e.source)).toEqual(["canonical", "countdown"]);
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"match": "m1", "answer": "1", "format": "boxed"}\n{"match": "m2", "answer": "2", "format": "latex"}\n');
    await expect(loadAnswerKeyFile(bad)).rejects.toThrow(/bad\.jsonl line 2: format/);
  });
});

describeShared("answer key from the shared GSM8K test set", () => {
  it("answers each loaded question in \\boxed{} with its gold when correct", () => {
    const rows = readFileSync(sharedPath("data/gsm8k/test.jsonl"), "utf8").split("\n").filter(Boolean).slice(0, 40).map((l) => JSON.parse(l));
    const key = new AnswerKeyStore();
    key.add(rows);
    const policy = policyWith({ initialAccuracy: 1 }, 1, key);
    for (const row of rows) {
      const reply = policy.respond(ask(`Solve: ${row.question}\nPut the final answer in \\boxed{}.`));
      expect(reply.content.endsWith(`\\boxed{${parseGsm8kGold(row.answer)}}`)).toBe(true);
    }
  });
});

describe("tools, countdown arithmetic, latency", () => {
  it("fills required parameters by JSON-schema type", () => {
    const call = buildToolCall(
      { type: "function", function: { name: "lookup", parameters: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" }, exact: { type: "boolean" }, unit: { enum: ["km"] }, note: { type: "string" } }, required: ["query", "limit", "exact", "unit"] } } },
      { expression: "1 + 1", question: "How far is 42.5 km?" },
      createRng(1),
    );
    expect(JSON.parse(call.function.arguments)).toEqual({ query: "How far is 42.5 km?", limit: 43, exact: true, unit: "km" });
  });

  it("solves and evaluates Countdown equations", () => {
    const eq = solveCountdown([25, 5, 4], 80) as string;
    expect(evaluateEquation(eq)).toBe(80);
    expect(solveCountdown([1, 1], 99)).toBeNull();
    expect(evaluateEquation("(25-5)*4")).toBe(80);
    expect(evaluateEquation("2 +")).toBeNull();
    expect(evaluateEquation("4 / 0")).toBeNull();
  });

  it("samples lognormal latency deterministically per seed", () => {
    const spec = { kind: "lognormal" as const, medianMs: 100, sigma: 0.5, maxMs: 1000 };
    const a = Array.from({ length: 5 }, (_, i) => sampleLatencyMs(spec, createRng(i)));
    expect(a).toEqual(Array.from({ length: 5 }, (_, i) => sampleLatencyMs(spec, createRng(i))));
    for (const v of a) expect(v).toBeGreaterThan(0);
    expect(sampleLatencyMs({ kind: "fixed", ms: 7 }, createRng(0))).toBe(7);
  });
});
