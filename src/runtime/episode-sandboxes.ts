/**
 * @module runtime/episode-sandboxes — an episode's sandboxes as runtime/episode-runner uses them: the attempt's
 * sandbox scope (sandbox/attempt: made for a run with sandboxes or a Worker with a backend; the secrets it lets in
 * kept out of the transcript) and the outcome once the sandbox had its say (an infrastructure failure aborts).
 */
import type { SleepFn } from "../client/index.ts";
import type { EpisodeMessage } from "../port/index.ts";
import type { RolloutLogger } from "../sdk/contract.ts";
import { attemptSandboxes, type AttemptSandboxes, type SandboxProvider } from "../sandbox/attempt.ts";
import type { HeldClaim } from "./claims.ts";
import type { EpisodeStop } from "./episode-stop.ts";
import type { OutcomeDecision } from "./outcome.ts";
import type { TranscriptRecorder } from "./transcript.ts";

/** What the sandbox scope takes from the episode's invocation (a part of runtime/episode-runner's deps). */
export interface EpisodeSandboxDeps {
  /** the backend and the run's ledger; absent: a function that asks for a sandbox is told there is none */
  sandboxes?: SandboxProvider;
  now(): number;
  sleep: SleepFn;
  random(): number;
  log: RolloutLogger;
}

/** The attempt's sandbox scope (sandbox/attempt): made only when the run has sandboxes or the Worker a backend. */
export function attemptSandboxesOf(msg: EpisodeMessage, deps: EpisodeSandboxDeps, secrets: Record<string, string>, held: readonly HeldClaim[], stop: EpisodeStop, recorder: TranscriptRecorder | undefined): AttemptSandboxes {
  // the secrets a run lets into its sandboxes may show in the recorded commands: never in the transcript
  for (const name of msg.sandbox?.secrets ?? []) if (secrets[name]) recorder?.redact(secrets[name]);
  return attemptSandboxes({
    provider: deps.sandboxes,
    config: msg.sandbox,
    runId: msg.runId,
    episodeKey: msg.episodeKey,
    attempt: msg.attempt,
    dispatchId: msg.dispatchId,
    discardEpisodeTimeoutSeconds: msg.discardEpisodeTimeoutSeconds,
    secrets,
    episodeKeys: held.map((h) => h.episode.apiKey),
    signal: stop.signal,
    now: deps.now,
    sleep: deps.sleep,
    random: deps.random,
    ...(recorder ? { record: (r) => recorder.sandboxCall(r) } : {}),
    log: deps.log,
  });
}

/**
 * The outcome once the sandbox had its say: a sandbox infrastructure failure (or a sandbox asked for in a run
 * without one, a bad instance type, a secret refused) aborts the attempt with its own cause whatever the function
 * returned — never a reward, never a score. An outcome that sends nothing (the claim expired, the run gave up) stays.
 */
export function sandboxVerdict(decision: OutcomeDecision, sandboxes: AttemptSandboxes | null): OutcomeDecision {
  const fatal = sandboxes?.fatal();
  if (!fatal || decision.action === "none") return decision;
  if (decision.outcome.kind === "abort" && decision.outcome.cause === fatal.cause) return decision;
  return { outcome: { kind: "abort", cause: fatal.cause, detail: fatal.error.message.slice(0, 600) }, action: "abort", error: fatal.error };
}
