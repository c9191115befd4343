/**
 * @module runtime/episode-resume — an episode attempt after a handover (docs/design/long-episodes.md): the next
 * holder (the `EpisodeHost`) goes on with the claims the first holder made — it never claims — by running the
 * function again from the start with the call journal (runtime/call-journal: the earlier holders' calls are answered
 * from it, never sent again), then, like the first holder, records the outcome, ends or aborts each claim once and
 * reports (runtime/episode-commit). A replay that did not repeat the journal (a function that is not deterministic)
 * is aborted ({@link REPLAY_DIVERGED}). Before its own wall it hands over again. The run's secrets and the swarms'
 * gateway headers are never in the record: each holder asks the run's scheduler for them again ({@link askAgain}).
 * Platform-free.
 */
import type { ClaimedEpisode } from "../client/types.ts";
import { bindSwarms, type RolloutLogger } from "../sdk/contract.ts";
import { abortAll, type ClaimAck, type EpisodeMessage } from "../port/index.ts";
import type { Task } from "../protocol/index.ts";
import { CallJournal, REPLAY_DIVERGED, type JournalEntry } from "./call-journal.ts";
import type { HeldClaim } from "./claims.ts";
import { finishAttempt, type EpisodeRunResult } from "./episode-commit.ts";
import { EpisodeMeter } from "./episode-meter.ts";
import { EpisodePort } from "./episode-port.ts";
import { gatewayHeaders, hasGatewayHeaders, headersBySwarm, swarmBudget, swarmClientOf, type Done, type EpisodeRunnerDeps } from "./episode-runner.ts";
import { attemptSandboxesOf, sandboxVerdict } from "./episode-sandboxes.ts";
import { createEpisodeStop } from "./episode-stop.ts";
import type { HandoverAnswer } from "./handover.ts";
import { guardFetch } from "./limits.ts";
import type { OutcomeDecision } from "./outcome.ts";
import { runFunction } from "./run-function.ts";
import { TranscriptRecorder } from "./transcript.ts";

/** One held claim, without its client (plain data: it crosses an RPC and is stored). */
export interface HandedClaim {
  swarm: string;
  episodeUuid: string;
  episode: ClaimedEpisode;
  globalStep?: number | null;
}

/**
 * What the next holder of an episode is given (plain data; stored by the host). Times are epoch ms. It holds no
 * secret value: the run's secrets and gateway headers are asked for again by each holder ({@link askAgain}).
 */
export interface HandoverRecord {
  msg: EpisodeMessage;
  task: Task;
  claims: HandedClaim[];
  claimedAtMs: number;
  /** when the handover was made: the episode's last LLM activity is no older */
  handedAtMs: number;
  /** 1 for the first holder after the queue consumer, then 2, 3 … */
  leg: number;
  /** every call the earlier holders made, in the order they ended */
  entries: JournalEntry[];
}

/** The plain-data part of held claims. */
export function handedClaims(held: readonly HeldClaim[]): HandedClaim[] {
  return held.map((h) => ({ swarm: h.swarm, episodeUuid: h.episodeUuid, episode: h.episode, ...(h.globalStep !== undefined ? { globalStep: h.globalStep } : {}) }));
}

/** What a later holder needs: the first holder's deps (without its handover), and its own way to hand over. */
export interface ResumeDeps extends Omit<EpisodeRunnerDeps, "handover" | "redelivery" | "stop"> {
  /** epoch ms at which this holder's gate closes (its wall less the handover reserve); Infinity: no handover */
  gateAtMs: number;
  /** gives the episode to the next holder (the next leg) */
  hand(record: HandoverRecord): Promise<HandoverAnswer>;
}

/**
 * Goes on with a handed-over episode: replay, run, commit, end or abort, report. Never throws for episode-level
 * failures. @returns as `runEpisode` does, or `handedOver` when it moved on again
 */
export async function resumeEpisode(record: HandoverRecord, deps: ResumeDeps): Promise<EpisodeRunResult> {
  const { msg, task } = record;
  const fn = deps.functions[msg.functionName];
  const meter = new EpisodeMeter(deps.now);
  // besides the ends/aborts and reports: the two RPCs asking for the run's secrets and gateway headers again
  const reservation = deps.budget?.reserve(record.claims.length * 3 + 6 + (deps.port.episodeHeartbeat ? 2 : 0), "episode end/abort and reports");
  const port = new EpisodePort(deps.port, reservation, deps);
  const fetch = guardFetch(deps.fetch, deps.limiter, deps.budget);
  const swarmFetch = guardFetch(deps.fetch, deps.limiter, swarmBudget(deps.budget, reservation));
  const urls = fn ? bindSwarms(fn, msg.swarms).urls : new Map<string, string>();
  const heldWith = (headers: Record<string, Record<string, string>>): HeldClaim[] =>
    record.claims.map((c) => ({ ...c, client: swarmClientOf(urls.get(c.swarm) ?? c.episode.baseUrl.replace(/\/v1\/?$/, ""), msg, swarmFetch, deps.log, headers[c.swarm] ?? {}) }));
  const asked = await askAgain(record, port, deps.log);
  if ("done" in asked) {
    // the run no longer holds this attempt (or cannot say): its claims are given back, nothing is ended
    await abortAll(heldWith(asked.headers ?? {}));
    reservation?.release();
    return asked.done;
  }
  const held = heldWith(asked.headers);
  // the operator's secrets win over the run's, as for the first holder
  const secrets = { ...asked.secrets, ...deps.secrets };
  const recorder = deps.transcripts ? new TranscriptRecorder(deps.now) : undefined;
  // the transcript says which holder finished the attempt: the viewer shows it among the function's log lines
  (recorder ? recorder.logger(deps.log) : deps.log).info(`handed over: holder ${record.leg + 1} of this attempt replays ${record.entries.length} answered LLM call(s) from its journal`, { holder: record.leg + 1, replayed: record.entries.length });
  const stop = createEpisodeStop();
  const journal = new CallJournal(record.entries, (cause, message) => stop.stop(cause, message));
  const sandboxes = msg.sandbox || deps.sandboxes ? attemptSandboxesOf(msg, deps, { ...secrets }, held, stop, recorder) : null;
  try {
    let decision: OutcomeDecision;
    if (!fn) {
      decision = { outcome: { kind: "abort", cause: "function_error" }, action: "abort", error: new Error(`no rollout function '${msg.functionName}' in this Worker`) };
    } else {
      const handover = { journal, gateAtMs: deps.gateAtMs, hand: (entries: JournalEntry[]) => deps.hand({ ...record, leg: record.leg + 1, handedAtMs: deps.now(), entries }) };
      const ran = await runFunction(fn, task, msg, { ...deps, fetch, secrets, gatewayHeaders: asked.headers, recorder, meter, stop, activeSinceMs: record.handedAtMs, handover, ...(reservation ? { reserve: reservation } : {}), ...(sandboxes ? { sandbox: sandboxes.get } : {}) }, held, record.claimedAtMs);
      if (ran.handedOver) return { kind: "handedOver", answer: ran.handedOver };
      decision = sandboxVerdict(ran, sandboxes);
      // a replay that left answered calls unused did not repeat the episode the server recorded: never end it
      if (journal.unused > 0 && decision.action !== "none") {
        decision = { outcome: { kind: "abort", cause: REPLAY_DIVERGED }, action: "abort", error: new Error(`the replay finished with ${journal.unused} answered call(s) unused`) };
      }
    }
    return await finishAttempt({ msg, task, held, claimedAtMs: record.claimedAtMs }, decision, port, deps, { meter, recorder }, sandboxes?.close());
  } finally {
    await sandboxes?.close();
    reservation?.release();
  }
}

/**
 * A later holder's step 0: what the first holder got from the run's scheduler and the record never holds, asked for
 * again. The gateway headers (only when a swarm has templates) through `swarmHeaders`, as the first holder did, keyed
 * by the function's swarm names; the run's secrets (unless the message says the run has none) by sending the claim
 * report again: the scheduler answers `duplicate` with the run's secrets while this attempt is the episode's running
 * one, anything else once it is not. @returns the secrets and headers, or the attempt's end (`stale`: refused;
 * `retry`: the scheduler did not answer) with the headers got so far, so its claims can be aborted
 */
export async function askAgain(
  record: HandoverRecord,
  port: EpisodePort,
  log: RolloutLogger,
): Promise<{ secrets: Record<string, string>; headers: Record<string, Record<string, string>> } | (Done & { headers?: Record<string, Record<string, string>> })> {
  const { msg } = record;
  const ref = { episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId };
  let headers: Record<string, Record<string, string>> = {};
  if (hasGatewayHeaders(msg)) {
    const got = await gatewayHeaders(msg, port).catch((err: unknown): Done => ({ done: { kind: "retry", reason: `swarmHeaders failed: ${String(err)}` } }));
    if ("done" in got) return got;
    headers = headersBySwarm(record.claims.map((c) => c.swarm), msg, got.headers);
  }
  if (msg.runHasSecrets === false) return { secrets: {}, headers };
  const claims = record.claims.map((c) => ({ swarm: c.swarm, episodeUuid: c.episodeUuid, globalStep: c.globalStep ?? null }));
  let ack: ClaimAck;
  try {
    ack = (await port.twice((p) => p.episodeClaimed({ ...ref, claims }))).answer;
  } catch (err) {
    return { done: { kind: "retry", reason: `episodeClaimed failed: ${String(err)}` }, headers };
  }
  if (ack.status !== "applied" && ack.status !== "duplicate") {
    log.warn("the run no longer holds this attempt: its claims are given back", { status: ack.status });
    return { done: { kind: "stale", reason: ack.reason }, headers };
  }
  return { secrets: ack.secrets ?? {}, headers };
}
