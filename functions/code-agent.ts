/**
 * @module functions/code-agent — a GSM8K agent that answers with a program (issue 21 §4): the model writes a
 * Python program for the problem, the attempt's sandbox runs it, and the reward compares the number it printed
 * (its last line of output) with the gold. A program that fails, prints nothing, runs past its time or prints
 * past the output cap scores 0 — the model's fault. A failure of the sandbox itself is the runtime's to handle:
 * the attempt is aborted and runs again, it never becomes a reward.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { completeChat, defineRolloutFunction, initialMessages, messageText, type RolloutContext, type RolloutOutput, SandboxError, scoreMathAnswer, type Task } from "ajet-edge";
import { mathGold } from "./math-agent.ts";

/** The system prompt: one Python program in a fenced block that prints only the final number. */
export const CODE_AGENT_SYSTEM_PROMPT =
  "You solve math word problems by writing code. Write a Python program that computes the answer and prints only " +
  "the final number. Reply with one ```python code block.";

/** Options of {@link runCodeAgent}. */
export interface CodeAgentOptions {
  /** default {@link CODE_AGENT_SYSTEM_PROMPT} */
  systemPrompt?: string;
  /** the program's wall time, ms (default 10 000; at most the run's sandbox.commandTimeoutSeconds) */
  timeoutMs?: number;
}

/** The program of a reply: the last fenced ```python (or plain ```) block, or null. */
export function extractProgram(reply: string): string | null {
  const blocks = [...reply.matchAll(/```(?:python|py)?[ \t]*\n([\s\S]*?)```/g)];
  const last = blocks.at(-1)?.[1];
  return last !== undefined && last.trim() !== "" ? last : null;
}

/** The answer a program printed: its last non-empty line of output, trimmed. */
export function printedAnswer(stdout: string): string | null {
  const lines = stdout.split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.at(-1) ?? null;
}

/**
 * Asks for a program, runs it in the attempt's sandbox, scores what it printed.
 * @returns `{ reward, is_success, metadata: { gold, printed, exit_code, timed_out, reason, program_chars },
 *   log_metrics: { program_ran, program_chars } }`; `reason` is `no_code`, `failed`, `timed_out`, `output_cap`,
 *   `no_output`, or the grader's reason
 * @throws EpisodeAbortError `invalid_task` for a task without gold; SandboxError for a sandbox failure (the runtime
 *   aborts the attempt)
 */
export async function runCodeAgent(task: Task, ctx: Pick<RolloutContext, "llm" | "model" | "signal" | "sandbox">, options: CodeAgentOptions = {}): Promise<RolloutOutput> {
  const gold = mathGold(task);
  const messages: ChatCompletionMessageParam[] = initialMessages(task, options.systemPrompt ?? CODE_AGENT_SYSTEM_PROMPT);
  const turn = await completeChat(ctx, { messages });
  const program = extractProgram(messageText(turn.message.content));
  const result = (reward: number, reason: string, more: Record<string, unknown> = {}): RolloutOutput => ({
    reward,
    is_success: reward === 1,
    metadata: { gold, reason, program_chars: program?.length ?? 0, ...more },
    log_metrics: { program_ran: more["exit_code"] === 0 ? 1 : 0, program_chars: program?.length ?? 0 },
  });
  if (program === null) return result(0, "no_code");
  const sandbox = await ctx.sandbox();
  await sandbox.files.write("solution.py", program);
  let run;
  try {
    run = await sandbox.commands.run("python3 solution.py", { timeoutMs: options.timeoutMs ?? 10_000 });
  } catch (err) {
    // a program that prints without end is the model's failure; anything else (the sandbox's) goes up
    if (err instanceof SandboxError && err.kind === "output_cap") return result(0, "output_cap");
    throw err;
  }
  const facts = { exit_code: run.exitCode, timed_out: run.timedOut, stderr_tail: run.stderr.slice(-300) };
  if (run.timedOut) return result(0, "timed_out", facts);
  if (run.exitCode !== 0) return result(0, "failed", facts);
  const printed = printedAnswer(run.stdout);
  if (printed === null) return result(0, "no_output", facts);
  const score = scoreMathAnswer(`\\boxed{${printed}}`, gold);
  return result(score.reward, score.reason, { ...facts, printed, normalized: score.normalized });
}

export default defineRolloutFunction({
  name: "code-agent",
  description: "GSM8K agent that writes a Python program; the sandbox runs it; reward 1.0 when the number it prints equals the gold",
  sandbox: true,
  run: (task, ctx) => runCodeAgent(task, ctx),
});
