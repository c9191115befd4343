/**
 * @module runtime/claims — claiming one logical episode on every swarm it needs, all or nothing, before a
 * deadline (BC-33), polling every ~100 ms for the first 2 s (the engine registers its episodes about 1 s after the
 * ROLLING edge the scheduler dispatches on), then a jittered exponential back-off on "No available episodes"; no waiting on other engine
 * states: the scheduler gates on the engine status and re-dispatches on the edge back to ROLLING (BC-25).
 */
import { ENGINE, type SwarmThrottlePolicy } from "../protocol/index.ts";
import { isRetryableError, type ClaimedEpisode, type SleepFn, type SwarmClient } from "../client/index.ts";
import { abortAll, type ClaimFailureCause, type ClaimHandle } from "../port/index.ts";
import { backoffDelayMs, type BackoffPolicy } from "../util/backoff.ts";
import { poolGate, type PoolGate } from "./pool-gate.ts";

/**
 * The in-invocation claim back-off after "No available episodes": first wait and cap (ms, ±50 % jitter), doubling
 * until the claim deadline (util/backoff, as the scheduler's with other numbers). One of the two claim back-offs that run: this one spans seconds inside one invocation;
 * the scheduler's (`tuning.claimRetry*Ms`, scheduler/dispatch `claimBackoffMs`) spaces re-dispatches after a
 * reported claim failure. The client's `SwarmBackoff` is the Python client's policy for `beginEpisode`, which the
 * product does not use (it is there for parity and its tests).
 */
export const IN_INVOCATION_CLAIM_BACKOFF: BackoffPolicy = { firstMs: 500, maxMs: 4_000, jitter: [0.5, 1.5] };

/** A claim held on one swarm: the handle to end or abort it with, and the claimed episode (endpoint and key). */
export interface HeldClaim extends ClaimHandle {
  client: SwarmClient;
  episode: ClaimedEpisode;
  /**
   * the swarm's `global_step` read alongside the successful claim (both requests in flight together) when that
   * read said ROLLING — the step the claim belongs to; undefined when it said anything else or failed (read it
   * after the claim then)
   */
  globalStep?: number | null;
}

/** A swarm to claim on, and the client that claims there and later ends or aborts the claim. */
export interface ClaimTarget {
  name: string;
  client: SwarmClient;
}

/** Why claiming stopped without every claim held. */
export interface ClaimFailure {
  kind: ClaimFailureCause;
  swarm: string;
  engineStatus?: string;
  detail: string;
}

/** Options of {@link claimAll}. */
export interface ClaimAllOptions {
  episodeType: "train" | "eval";
  discardEpisodeTimeoutSeconds: number;
  throttlePolicy: SwarmThrottlePolicy | null;
  /** epoch ms after which no new claim attempt starts (BC-33: at most half the smallest discard timeout) */
  deadlineAtMs: number;
  now(): number;
  sleep: SleepFn;
  random(): number;
  signal?: AbortSignal;
  /**
   * pause between claims during the first `fastWindowMs` of claiming (ms, default 100; ±50 % jitter): episodes are
   * dispatched on the edge to ROLLING, and the engine registers its episodes about 1 s after that edge, so the first
   * claims are expected to find nothing and the one after the registration should follow it closely
   */
  fastPollMs?: number;
  /** how long claiming polls at `fastPollMs` before backing off (ms, default 2000) */
  fastWindowMs?: number;
  /** back-off after the fast window (ms, default {@link IN_INVOCATION_CLAIM_BACKOFF}); doubles up to `maxBackoffMs`; ±50 % jitter */
  backoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Claims on each swarm in order. If one swarm cannot be claimed before the deadline, the claims already held are
 * aborted (quietly: abort never ends anything) and the failure is returned (BC-33).
 */
export async function claimAll(
  swarms: readonly ClaimTarget[],
  options: ClaimAllOptions,
): Promise<{ held: HeldClaim[] } | { failure: ClaimFailure }> {
  const held: HeldClaim[] = [];
  for (const { name, client } of swarms) {
    const got = await claimOne(name, client, options);
    if ("failure" in got) {
      await abortAll(held);
      const timedOut = got.failure.kind === "noEpisodes" || got.failure.kind === "other";
      return held.length > 0 && timedOut ? { failure: { ...got.failure, kind: "deadline" } } : got;
    }
    held.push({ swarm: name, client, episodeUuid: got.episode.episodeUuid, episode: got.episode, ...(got.globalStep !== undefined ? { globalStep: got.globalStep } : {}) });
  }
  return { held };
}

async function claimOne(
  swarm: string,
  client: SwarmClient,
  o: ClaimAllOptions,
): Promise<{ episode: ClaimedEpisode; globalStep?: number | null } | { failure: ClaimFailure }> {
  const gate = poolGate(client.baseURL, o.episodeType);
  let holding: number | null = null;
  gate.enter();
  try {
    const backoff: BackoffPolicy = { ...IN_INVOCATION_CLAIM_BACKOFF, firstMs: o.backoffMs ?? IN_INVOCATION_CLAIM_BACKOFF.firstMs, maxMs: o.maxBackoffMs ?? IN_INVOCATION_CLAIM_BACKOFF.maxMs };
    let slowWaits = 0;
    const fastWindowMs = o.fastWindowMs ?? 2_000;
    const fastUntilMs = o.now() + fastWindowMs;
    const fastPollMs = o.fastPollMs ?? 100;
    let lastDetail = "No available episodes to claim.";
    let lastKind: ClaimFailureCause = "noEpisodes";
    let probing = false;
    while (true) {
      // While the pool is believed empty (or nothing is known), one claim of this isolate asks at a time
      // (runtime/pool-gate.ts); the others wait for its answer and claim together once it found an episode.
      if (holding === null) {
        const turn = await takeTurn(gate, o);
        if (turn === "deadline") return { failure: { kind: lastKind, swarm, detail: lastDetail } };
        if (turn !== "free") holding = turn;
      }
      // The status is read together with the claim, so a claimed episode's step is known without one more round
      // trip before the function starts. Claims only succeed in ROLLING, and a status read in flight at the same
      // moment that says ROLLING names the claim's step (a different step would need a whole weight sync and a
      // re-registration between two concurrent requests); any other answer is not used. A prober's repeated asks
      // of an empty pool go without it (the step is read after its claim then): they are expected to find nothing.
      const status = probing
        ? Promise.resolve(undefined)
        : client.getEngineStatus({ ...(o.signal ? { signal: o.signal } : {}) }).then(
            (snap) => (snap.status === ENGINE.ROLLING ? snap.globalStep : undefined),
            () => undefined,
          );
      try {
        const r = await client.claimEpisode({
          episodeType: o.episodeType,
          discardEpisodeTimeoutSeconds: o.discardEpisodeTimeoutSeconds,
          throttlePolicy: o.throttlePolicy,
          signal: o.signal,
        });
        gate.learn(r.kind === "claimed" ? "claimed" : r.kind === "empty" ? "empty" : "other", o.now());
        if (r.kind === "claimed") return { episode: r, globalStep: await status };
        if (r.kind === "notReady") return { failure: { kind: r.reason, swarm, engineStatus: r.status, detail: r.failCause } };
        if (r.kind === "rejected") return { failure: { kind: "other", swarm, detail: r.failCause } };
        lastDetail = r.failCause;
        lastKind = "noEpisodes";
      } catch (err) {
        gate.learn("other", o.now());
        if (o.signal?.aborted) throw err;
        // A 422 or a refused option is a configuration error (BC-36), and an exhausted subrequest budget cannot
        // recover within this invocation (BC-49): never retried.
        if (!isRetryableError(err)) return { failure: { kind: "other", swarm, detail: err instanceof Error ? err.message : String(err) } };
        lastDetail = err instanceof Error ? err.message : String(err);
        lastKind = "other";
      }
      // the fast pace lasts from the start of the pool's empty spell (a prober taking over keeps it), else from ours
      const fastUntil = gate.emptySinceMs !== null ? Math.max(fastUntilMs, gate.emptySinceMs + fastWindowMs) : fastUntilMs;
      const fast = o.now() < fastUntil;
      const u = o.random();
      const wait = fast ? fastPollMs * (0.5 + u) : backoffDelayMs(backoff, slowWaits + 1, u);
      if (o.now() + wait > o.deadlineAtMs) return { failure: { kind: lastKind, swarm, detail: lastDetail } };
      // the one that holds the turn keeps it while it waits (it is the prober); one that claimed freely and found
      // the pool empty waits, then takes its turn like everyone else
      probing = holding !== null && lastKind === "noEpisodes";
      await o.sleep(wait, o.signal);
      if (!fast) slowWaits++;
    }
  } finally {
    if (holding !== null) gate.release(holding);
    gate.leave();
  }
}

/**
 * Waits until this claim may ask (runtime/pool-gate.ts): at once when the pool is believed to have episodes or no
 * one holds the turn, else until the holder's next answer or release (then again, unless the deadline passed). The
 * wait is event-driven, not timed: the holder answers at least once per back-off step, so a waiter gives up at most
 * one of its steps past its deadline (it starts no claim after it).
 * @returns the caller's holder number (it holds the turn), "free" (claim without it) or "deadline"
 * @throws the signal's reason when it fires
 */
async function takeTurn(gate: PoolGate, o: ClaimAllOptions): Promise<number | "free" | "deadline"> {
  while (true) {
    const t = gate.take(o.now());
    if (t !== "busy") return t;
    if (o.now() >= o.deadlineAtMs) return "deadline";
    await untilChangedOrAborted(gate, o.signal);
  }
}

/** The gate's next change, or the signal's reason thrown when it fires first. */
async function untilChangedOrAborted(gate: PoolGate, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return gate.changed();
  if (signal.aborted) throw signal.reason;
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([gate.changed(), aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
