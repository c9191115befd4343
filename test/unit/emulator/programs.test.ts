/**
 * The simulated policy's code-writing answer shape (emulator/policy/programs): a prompt that asks for a Python
 * program gets one fenced ```python block; run with python3, a correct reply prints the gold, a wrong one another
 * number, a malformed one fails or has no code. Prompts that ask for no program keep their old replies.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { AnswerKeyStore, DEFAULT_POLICY, SimulatedPolicy } from "../../../src/emulator/index.ts";
import { asksForProgram } from "../../../src/emulator/policy/programs.ts";

const QUESTION = "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?";
const SYSTEM = "Solve the math problem by writing a Python program that computes the answer and prints only the final number. Reply with one ```python code block.";

function policy(initialAccuracy: number, malformedRate = 0) {
  const key = new AnswerKeyStore();
  key.add([{ question: QUESTION, answer: "Natalia sold 48/2 = 24 clips in May.\n#### 72" }]);
  return new SimulatedPolicy({ ...DEFAULT_POLICY, initialAccuracy, malformedRate, toolCallRate: 0 }, 7, key, { kind: "fixed", ms: 0 });
}
const ask = (episodeUuid: string, system = SYSTEM) => ({ messages: [{ role: "system", content: system }, { role: "user", content: QUESTION }], episodeUuid, callIndex: 1 });

/** The program of a reply, run with python3: its stdout, or null when there is no code block. */
function runProgram(reply: string): { code: number | null; stdout: string } | null {
  const m = /```python\n([\s\S]*?)```/.exec(reply);
  if (!m) return null;
  const r = spawnSync("python3", ["-c", m[1]!], { encoding: "utf8", timeout: 10_000 });
  return { code: r.status, stdout: r.stdout };
}

describe("the code-writing answer shape", () => {
  it("is chosen only when the prompt asks for a Python program", () => {
    expect(asksForProgram([{ role: "system", content: SYSTEM }])).toBe(true);
    expect(asksForProgram([{ role: "user", content: "Write a python script that prints 3" }])).toBe(true);
    expect(asksForProgram([{ role: "user", content: "Solve step by step and put the answer in \\boxed{}." }])).toBe(false);
    // the existing shape is unchanged for other prompts
    const boxed = policy(1).respond(ask("e-boxed", "Solve step by step and put the answer in \\boxed{}.")).content;
    expect(boxed).toContain("\\boxed{72}");
    expect(boxed).not.toContain("```");
  });

  it("correct replies are programs that print the gold", () => {
    for (let i = 0; i < 8; i++) {
      const reply = policy(1).respond(ask(`e-right-${i}`));
      expect(reply.outcome).toBe("correct");
      expect(runProgram(reply.content)).toEqual({ code: 0, stdout: "72\n" });
    }
  });

  it("wrong replies print another number; malformed ones fail or carry no code", () => {
    for (let i = 0; i < 8; i++) {
      const wrong = runProgram(policy(0, 0).respond(ask(`e-wrong-${i}`)).content);
      expect(wrong?.code).toBe(0);
      expect(wrong?.stdout.trim()).toMatch(/^-?\d+$/);
      expect(wrong?.stdout).not.toBe("72\n");
    }
    const shapes = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = runProgram(policy(0, 1).respond(ask(`e-bad-${i}`)).content);
      shapes.add(r === null ? "no code" : r.code === 0 ? "ran" : "failed");
    }
    expect(shapes.has("ran")).toBe(false);
    expect(shapes).toEqual(new Set(["no code", "failed"]));
  });
});
