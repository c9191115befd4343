/**
 * @module emulator/policy/replies — what the simulated policy says: it finds the task in the prompt (an
 * answer-key entry, or a built-in "What is A + B?" arithmetic question as in the recorded transcript) and
 * writes a correct, wrong or malformed reply in the task's answer format, or a generic reply.
 */
import { COUNTDOWN_ANSWER_TAG, inAnswerTag } from "../../rewards/index.ts";
import type { Rng } from "../rng.ts";
import { goldAnswer, type AnswerFormat, type AnswerKeyEntry, type AnswerKeyStore } from "./answer-key.ts";
import { evaluateEquation, wrongEquation } from "./countdown.ts";
import { taskTexts, type ChatMessage } from "./chat-shapes.ts";

/** The task the policy recognised in a prompt. */
export type RecognisedTask =
  | { kind: "key"; entry: AnswerKeyEntry; question: string }
  | { kind: "arithmetic"; expression: string; value: number; format: AnswerFormat; question: string }
  | { kind: "generic"; question: string };

/** How a reply turns out: scored correct, wrong answer, or no box / no tag at all. */
export type AnswerOutcome = "correct" | "wrong" | "malformed";

const ARITHMETIC = /what is\s+(-?\d+(?:\.\d+)?)\s*([-+*/×])\s*(-?\d+(?:\.\d+)?)\s*\?/i;

/** Finds the task in the user messages (last first), then the system messages. */
export function recogniseTask(messages: readonly ChatMessage[], answerKey: AnswerKeyStore): RecognisedTask {
  const texts = taskTexts(messages);
  for (const text of texts) {
    const entry = answerKey.match(text);
    if (entry) return { kind: "key", entry, question: text };
  }
  for (const text of texts) {
    const m = ARITHMETIC.exec(text);
    if (!m) continue;
    const op = m[2] === "×" ? "*" : (m[2] as string);
    const expression = `${m[1]} ${op} ${m[3]}`;
    const value = evaluateEquation(expression);
    if (value === null) continue;
    return { kind: "arithmetic", expression, value, format: text.includes(`<${COUNTDOWN_ANSWER_TAG}>`) ? "answer-tag" : "boxed", question: text };
  }
  return { kind: "generic", question: texts[0] ?? "" };
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : String(Number(n.toFixed(6))));

/** A number different from `gold` (keeps integers integral). Non-numeric golds get a random integer. */
export function wrongNumber(gold: string, rng: Rng): string {
  const g = Number(gold.replace(/[,$]/g, ""));
  if (gold.trim() === "" || !Number.isFinite(g)) return String(rng.int(1, 100));
  const deltas = [1, 2, 3, 5, 10, -1, -2, -3];
  const candidate = rng.next() < 0.2 ? g * 2 : g + rng.pick(deltas);
  return fmt(candidate === g ? g + 1 : candidate);
}

/** An expression for a calculator-style tool: from the task (Countdown equation, arithmetic, numbers in the question). */
export function taskExpression(task: RecognisedTask, outcome: AnswerOutcome, rng: Rng): string {
  if (task.kind === "arithmetic") return task.expression;
  if (task.kind === "key" && task.entry.nums && task.entry.target !== undefined) {
    const gold = goldAnswer(task.entry);
    return outcome === "correct" && gold ? gold : wrongEquation(task.entry.nums, task.entry.target, rng);
  }
  const nums = (task.question.match(/\d+(?:\.\d+)?/g) ?? []).slice(0, 3);
  if (nums.length < 2) return "2 + 2";
  return nums.reduce((acc, n) => `${acc} ${rng.pick(["+", "*", "-"])} ${n}`);
}

const GENERIC = [
  "I have looked at the request carefully. Here is a concise answer based on the information given.",
  "Thanks for the question. After thinking it through, my response is below.\nThe key point is to break the problem into smaller steps and check each one.",
  "Sure. Let me address this directly: the most reasonable approach is to start from what is known and reason step by step.",
];

function keyReply(entry: AnswerKeyEntry, outcome: AnswerOutcome, rng: Rng): string {
  const gold = goldAnswer(entry);
  if (entry.format === "boxed") {
    const answer = outcome === "correct" && gold ? gold : wrongNumber(gold, rng);
    const reasoning = "Let me solve this step by step.\nFirst I identify the quantities given in the problem, then I combine them.";
    return outcome === "malformed" ? `${reasoning}\nI think the answer is ${answer}.` : `${reasoning}\nSo the answer is ${answer}.\n\\boxed{${answer}}`;
  }
  let equation: string;
  if (entry.nums && entry.target !== undefined) {
    equation = outcome === "correct" && gold ? gold : wrongEquation(entry.nums, entry.target, rng);
  } else {
    equation = outcome === "correct" && gold ? gold : wrongNumber(gold, rng);
  }
  const think = entry.nums
    ? `<think>I need to reach ${entry.target} using ${entry.nums.join(", ")}, each number once. Let me try ${equation}.</think>`
    : `<think>Let me work this out carefully.</think>`;
  return outcome === "malformed" ? `${think}\nMy answer is ${equation}` : `${think}\n${inAnswerTag(equation)}`;
}

/** The reply text for a recognised task and an outcome (generic tasks ignore the outcome). */
export function composeReply(task: RecognisedTask, outcome: AnswerOutcome, rng: Rng): string {
  if (task.kind === "generic") return rng.pick(GENERIC);
  if (task.kind === "key") return keyReply(task.entry, outcome, rng);
  const value = outcome === "correct" ? fmt(task.value) : wrongNumber(fmt(task.value), rng);
  const lead = `Let me compute ${task.expression}. The result is ${value}.`;
  if (outcome === "malformed") return lead;
  return task.format === "boxed" ? `${lead} Final answer: \\boxed{${value}}` : `${lead} Final answer: ${inAnswerTag(String(value))}`;
}
