/**
 * @module emulator/policy/programs — the simulated policy's code-writing answer shape: when the prompt asks for a
 * Python program (as the `code-agent` function's does: "…write a Python program … print …"), the reply is one
 * fenced ```python block whose program computes and prints the answer — the gold when the answer is correct, a
 * near miss when wrong, and a program that fails (a syntax error, a misspelt name, or no code at all) when
 * malformed. Deterministic for the reply's random stream.
 */
import type { Rng } from "../rng.ts";
import { goldAnswer } from "./answer-key.ts";
import { taskTexts, type ChatMessage } from "./chat-shapes.ts";
import { wrongNumber, type AnswerOutcome, type RecognisedTask } from "./replies.ts";

/** The prompt asks for a program: a Python program / script, or a ```python block. */
const ASKS_FOR_PROGRAM = /\bpython\s+(program|script)\b|```python/i;

/** True when the user or system messages ask for a Python program. */
export function asksForProgram(messages: readonly ChatMessage[]): boolean {
  return taskTexts(messages).some((t) => ASKS_FOR_PROGRAM.test(t));
}

/** The task's answer as the program should print it (a number for GSM8K and arithmetic tasks). */
function answerOf(task: Exclude<RecognisedTask, { kind: "generic" }>): string {
  if (task.kind === "arithmetic") return Number.isInteger(task.value) ? String(task.value) : String(Number(task.value.toFixed(6)));
  return goldAnswer(task.entry).replace(/,/g, "");
}

/** A program that prints `value`, computed in two steps so it reads like a solution. */
function programPrinting(value: string, rng: Rng): string {
  const n = Number(value);
  if (Number.isInteger(n) && Math.abs(n) < 1e12) {
    const k = rng.int(2, 97);
    return [`# work out the quantities, then combine them`, `total = ${n + k}`, `adjustment = ${k}`, `answer = total - adjustment`, `print(answer)`].join("\n");
  }
  if (Number.isFinite(n)) return [`# the quantity asked for`, `answer = ${value}`, `print(answer)`].join("\n");
  return [`answer = ${JSON.stringify(value)}`, `print(answer)`].join("\n");
}

/** The reply for a task when the prompt asks for a program: one fenced Python block (or, malformed, a broken one or none). */
export function composeProgramReply(task: Exclude<RecognisedTask, { kind: "generic" }>, outcome: AnswerOutcome, rng: Rng): string {
  const gold = answerOf(task);
  const lead = "I will write a short program that computes the answer.";
  if (outcome === "malformed") {
    const broken = rng.pick(["syntax", "name", "prose"] as const);
    if (broken === "prose") return `${lead}\nThe answer should be ${gold}, but I did not write the code.`;
    const body = broken === "syntax" ? `answer = ${gold}\nprint(answer` : `answer = ${gold}\nprint(anwser)`;
    return `${lead}\n\n\`\`\`python\n${body}\n\`\`\``;
  }
  const value = outcome === "correct" ? gold : wrongNumber(gold, rng);
  return `${lead}\n\n\`\`\`python\n${programPrinting(value, rng)}\n\`\`\``;
}
