/**
 * @module runtime/episode-resume — an episode attempt after a handover (docs/design/long-episodes.md): the next
 * holder (the `EpisodeHost`) goes on with the claims the first holder made — it never claims — by running the
 * function again from the start with the call journal (runtime/call-journal: the earlier holders' calls are answered
 * from it, never sent again), then, like the first holder, records the outcome, ends or aborts each claim once and
 * reports (runtime/episode-commit). A replay that did not repeat the journal (a function that is not deterministic)
 * is aborted ({@link REPLAY_DIVERGED}). Before its own wall it hands over again. Platform-free.
 */
import { SwarmClient } from "../client/index.ts";
import type { ClaimedEpisode } from "../client/types.ts";
import { bindSwarms } from "../sdk/contract.ts";
import { declaresClientActive, type EpisodeMessage } from "../port/index.ts";
import type { Task } from "../protocol/index.ts";
import { CallJournal, REPLAY_DIVERGED, type JournalEntry } from "./call-journal.ts";
import type { HeldClaim } from "./claims.ts";
import { finishAttempt, type EpisodeRunResult } from "./episode-commit.ts";
import { EpisodeMeter } from "./episode-meter.ts";
import { EpisodePort } from "./episode-port.ts";
import { swarmBudget, type EpisodeRunnerDeps } from "./episode-runner.ts";
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

/** What the next holder of an episode is given (plain data). Times are epoch ms. */
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
  const reservation = deps.budget?.reserve(record.claims.length * 3 + 4 + (deps.port.episodeHeartbeat ? 2 : 0), "episode end/abort and reports");
  const port = new EpisodePort(deps.port, reservation, deps);
  const fetch = guardFetch(deps.fetch, deps.limiter, deps.budget);
  const swarmFetch = guardFetch(deps.fetch, deps.limiter, swarmBudget(deps.budget, reservation));
  const urls = fn ? bindSwarms(fn, msg.swarms).urls : new Map<string, string>();
  const held: HeldClaim[] = record.claims.map((c) => ({
    ...c,
    client: new SwarmClient({ baseURL: urls.get(c.swarm) ?? c.episode.baseUrl.replace(/\/v1\/?$/, ""), clientUuid: msg.clientUuid, fetch: swarmFetch, logger: deps.log, declareClientActive: declaresClientActive(msg.episodeType) }),
  }));
  const recorder = deps.transcripts ? new TranscriptRecorder(deps.now) : undefined;
  // the transcript says which holder finished the attempt: the viewer shows it among the function's log lines
  (recorder ? recorder.logger(deps.log) : deps.log).info(`handed over: holder ${record.leg + 1} of this attempt replays ${record.entries.length} answered LLM call(s) from its journal`, { holder: record.leg + 1, replayed: record.entries.length });
  const stop = createEpisodeStop();
  const journal = new CallJournal(record.entries, (cause, message) => stop.stop(cause, message));
  const sandboxes = msg.sandbox || deps.sandboxes ? attemptSandboxesOf(msg, deps, { ...deps.secrets }, held, stop, recorder) : null;
  try {
    let decision: OutcomeDecision;
    if (!fn) {
      decision = { outcome: { kind: "abort", cause: "function_error" }, action: "abort", error: new Error(`no rollout function '${msg.functionName}' in this Worker`) };
    } else {
      const handover = { journal, gateAtMs: deps.gateAtMs, hand: (entries: JournalEntry[]) => deps.hand({ ...record, leg: record.leg + 1, handedAtMs: deps.now(), entries }) };
      const ran = await runFunction(fn, task, msg, { ...deps, fetch, secrets: { ...deps.secrets }, recorder, meter, stop, activeSinceMs: record.handedAtMs, handover, ...(reservation ? { reserve: reservation } : {}), ...(sandboxes ? { sandbox: sandboxes.get } : {}) }, held, record.claimedAtMs);
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
