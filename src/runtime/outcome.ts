/**
 * @module runtime/outcome — turns what a rollout function did into the episode's outcome and the one server
 * action it leads to (docs/design/episode-lifecycle.md step 3). Pure.
 *
 * | what happened | outcome | server action |
 * |---|---|---|
 * | threw anything, idle longer than the discard timeout on some swarm | abort `expired` (BC-23) | none |
 * | threw `EpisodeAbortError(reason)` (also inside the SDK's `cause`; `idle_deadline` is the runtime's watchdog) | abort `reason` | abort |
 * | threw a `SubrequestBudgetExceededError` | abort `subrequest_budget` (BC-49) | abort |
 * | threw anything else | abort `function_error` | abort |
 * | the result is not one finite reward per swarm | abort `invalid_reward` (BC-22) | abort |
 * | no successful LLM call on some swarm | abort `no_llm_call` (BC-29) | abort |
 * | past the local lifetime (8 × discard timeout) | abort `lifetime_exceeded` (BC-24) | abort |
 * | idle longer than the discard timeout on some swarm | abort `expired` (BC-23) | none: the server's janitor reverts it, and the episode may already be someone else's |
 * | eval episode | score | abort (spec §5.8) |
 * | otherwise | end | end |
 */
import { assertValidWorkflowOutput, type ValidWorkflowOutput } from "../protocol/index.ts";
import { findCause, findEpisodeAbortError } from "../sdk/llm-guards.ts";
import { AbortCause, type EpisodeOutcome } from "../port/index.ts";
import { SubrequestBudgetExceededError } from "./limits.ts";
import { isIdleExpired, type LlmActivity } from "./rollout-context.ts";

/** What the runtime does on the server after recording the outcome. */
export type ServerAction = "end" | "abort" | "none";

/** The outcome to record (outbox) and the action to take, plus the validated outputs for `end`/`score`. */
export interface OutcomeDecision {
  outcome: EpisodeOutcome;
  action: ServerAction;
  /** per swarm name; present for `end` and `score` */
  outputs?: Record<string, ValidWorkflowOutput>;
  /** the error behind an abort, for the log */
  error?: unknown;
  /**
   * the episode moved to its next holder (runtime/handover): `handed` it has it, `unknown` it may have it. Either
   * way this holder sends nothing more for the attempt (`action` is `none`); the run's heartbeat lease settles `unknown`
   */
  handedOver?: "handed" | "unknown";
}

/** Inputs of {@link decideOutcome}. */
export interface OutcomeInput {
  /** the function's return value, when it returned */
  result?: unknown;
  /** what it threw, when it threw */
  error?: unknown;
  threw: boolean;
  /** the swarms claimed, in the function's order (the first one's reward is the episode's reward) */
  swarms: readonly string[];
  activity: Readonly<Record<string, LlmActivity>>;
  episodeType: "train" | "eval";
  discardEpisodeTimeoutSeconds: number;
  /** true when the local lifetime (BC-24) passed before the function returned */
  lifetimeExceeded: boolean;
  nowMs: number;
}

/** Longest error detail recorded with an abort outcome (characters). */
export const FAILURE_DETAIL_MAX_CHARS = 600;

/**
 * An error as one short line for the run's status: `Name: message @ file:line` for its first few stack frames
 * outside node_modules and the runtime's own internals (where the function's bug is).
 */
export function failureDetail(err: unknown): string {
  if (!(err instanceof Error)) return String(err).slice(0, FAILURE_DETAIL_MAX_CHARS);
  const frames = (err.stack ?? "")
    .split("\n")
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => /:\d+:\d+\)?$/.test(l) && !/node_modules|node:internal|\/src\/runtime\//.test(l))
    .slice(0, 3)
    .map((l) => l.replace(/^at\s+/, "").replace(/\(?(?:file:\/\/)?[^()\s]*?([^/()\s]+\/[^/()\s]+:\d+:\d+)\)?$/, "$1"));
  const head = `${err.name}: ${err.message}`;
  return (frames.length ? `${head} @ ${frames.join(" < ")}` : head).slice(0, FAILURE_DETAIL_MAX_CHARS);
}

/** Adds the error's detail to an abort outcome (the scheduler stops the run on the same detail repeated). */
function withDetail(decision: OutcomeDecision, err: unknown): OutcomeDecision {
  return decision.outcome.kind === "abort" ? { ...decision, outcome: { ...decision.outcome, detail: failureDetail(err) } } : decision;
}

function abort(cause: string, error?: unknown, action: ServerAction = "abort"): OutcomeDecision {
  return { outcome: { kind: "abort", cause }, action, error };
}

/**
 * Splits a function's result into one output per swarm: a single-swarm function returns one output (an object
 * with `reward`), a multi-swarm function one output per swarm name (issue 4 §1).
 * @throws Error naming the missing swarm or the bad shape
 */
export function outputsPerSwarm(result: unknown, swarms: readonly string[]): Record<string, unknown> {
  if (typeof result !== "object" || result === null) throw new Error("the function must return a WorkflowOutput object");
  const [first] = swarms;
  if (swarms.length === 1 && first !== undefined && "reward" in result) return { [first]: result };
  const out: Record<string, unknown> = {};
  for (const s of swarms) {
    const o = (result as Record<string, unknown>)[s];
    if (o === undefined) throw new Error(`the function returned no output for swarm '${s}' (return one WorkflowOutput per swarm)`);
    out[s] = o;
  }
  return out;
}

function idleExpiredOnSome(input: OutcomeInput): boolean {
  return input.swarms.some((s) => {
    const act = input.activity[s];
    return act !== undefined && isIdleExpired(act, input.discardEpisodeTimeoutSeconds, input.nowMs);
  });
}

/** Decides the outcome of one episode; see the module table. */
export function decideOutcome(input: OutcomeInput): OutcomeDecision {
  if (input.threw) {
    // past the server's idle deadline an abort could revert another client's claim of the same episode (spec
    // §3.10: abort does not check ownership): send nothing, the janitor reverts it (BC-23)
    if (idleExpiredOnSome(input)) return abort(AbortCause.expired, input.error, "none");
    const reason = findEpisodeAbortError(input.error)?.reason;
    if (reason) return abort(reason, input.error);
    if (findCause(input.error, SubrequestBudgetExceededError)) return abort(AbortCause.subrequestBudget, input.error);
    return withDetail(abort(AbortCause.functionError, input.error), input.error);
  }
  let outputs: Record<string, ValidWorkflowOutput>;
  try {
    outputs = Object.fromEntries(
      Object.entries(outputsPerSwarm(input.result, input.swarms)).map(([s, o]) => [s, assertValidWorkflowOutput(o)]),
    );
  } catch (err) {
    return abort(AbortCause.invalidReward, err);
  }
  for (const s of input.swarms) {
    const act = input.activity[s];
    if (!act || act.successfulCalls === 0) return abort(AbortCause.noLlmCall);
  }
  if (input.lifetimeExceeded) return abort(AbortCause.lifetimeExceeded);
  for (const s of input.swarms) {
    const act = input.activity[s];
    if (act && isIdleExpired(act, input.discardEpisodeTimeoutSeconds, input.nowMs)) return abort(AbortCause.expired, undefined, "none");
  }
  const primary = input.swarms[0];
  const reward = primary !== undefined ? (outputs[primary]?.reward ?? 0) : 0;
  if (input.episodeType === "eval") return { outcome: { kind: "score", reward }, action: "abort", outputs };
  return { outcome: { kind: "end", reward }, action: "end", outputs };
}
