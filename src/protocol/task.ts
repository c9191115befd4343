/**
 * @module protocol/task — `Task` (client-side only) and `WorkflowOutput` (sent inside EndEpisodeRequest), spec §6.
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas
import { describeValue } from "../util/describe-value.ts";

/**
 * A task (spec §6.1). Only `task_id` crosses the wire. Ours are namespaced and stable (`gsm8k:test:17`, BC-30).
 * Read tolerantly: missing fields take the reference defaults, unknown fields are kept.
 */
export const Task = z.looseObject({
  main_query: z._default(z.string(), ""),
  init_messages: z._default(z.array(z.record(z.string(), z.unknown())), []),
  task_id: z._default(z.string(), ""),
  env_type: z._default(z.string(), ""),
  metadata: z._default(z.record(z.string(), z.unknown()), {}),
});
export type Task = z.infer<typeof Task>;

/** `log_metrics` values: a number or a list of numbers (spec §6.2). */
export const LogMetricValue = z.union([z.number(), z.array(z.number())]);

/**
 * WorkflowOutput as the server accepts it (spec §6.2): `reward` may be a number, a list or null on the wire. Use
 * this schema to READ outputs (the emulator, transcripts). Use {@link ValidWorkflowOutput} before SENDING one.
 */
export const WorkflowOutput = z.looseObject({
  reward: z._default(z.union([z.number(), z.array(z.number()), z.null()]), null),
  is_success: z._default(z.nullable(z.boolean()), null),
  metadata: z._default(z.record(z.string(), z.unknown()), {}),
  log_metrics: z._default(z.record(z.string(), LogMetricValue), {}),
});
export type WorkflowOutput = z.infer<typeof WorkflowOutput>;

/**
 * A WorkflowOutput that the engine can train on: `reward` is ONE finite number (BC-22). NaN and ±Infinity are
 * refused (JSON.stringify would turn them into null), as are null and arrays (the engine runner throws on both,
 * after `/end_episode` already answered success — spec §11.12).
 */
export const ValidWorkflowOutput = z.extend(WorkflowOutput, {
  reward: z
    .number({ error: (issue) => invalidRewardMessage(issue.input) })
    .check(z.refine(Number.isFinite, { error: (issue) => invalidRewardMessage(issue.input) })),
});

/**
 * The one line a user reads for a reward the engine cannot train on: the value received and the fix, e.g.
 * `reward must be a finite number, got NaN: …`.
 */
function invalidRewardMessage(received: unknown): string {
  const got =
    received === undefined ? "no reward field"
    : typeof received === "string" ? `the string ${describeValue(received)}`
    : describeValue(received);
  return `reward must be a finite number, got ${got}: return one number (e.g. 0 for a wrong answer), or throw when the episode cannot be scored`;
}
export type ValidWorkflowOutput = z.infer<typeof ValidWorkflowOutput>;

/** Thrown when an output fails {@link ValidWorkflowOutput}; `reason` is `invalid_reward` for BC-22 logging. */
export class InvalidWorkflowOutputError extends Error {
  readonly reason = "invalid_reward";
  constructor(
    message: string,
    readonly issues: z.core.$ZodIssue[],
  ) {
    super(message);
    this.name = "InvalidWorkflowOutputError";
  }
}

/**
 * Validates an output before it is sent with `/end_episode`.
 * @returns the parsed output (defaults filled in).
 * @throws InvalidWorkflowOutputError naming the field, e.g. `workflow_output.reward: reward must be a finite number, got NaN: …`.
 */
export function assertValidWorkflowOutput(output: unknown): ValidWorkflowOutput {
  // JSON cannot carry NaN/Infinity; check the raw value first so the message says what really happened.
  const parsed = ValidWorkflowOutput.safeParse(output);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues
    .map((i) => `workflow_output${i.path.length ? "." + i.path.join(".") : ""}: ${i.message}`)
    .join("; ");
  throw new InvalidWorkflowOutputError(`invalid WorkflowOutput: ${where}`, parsed.error.issues);
}
