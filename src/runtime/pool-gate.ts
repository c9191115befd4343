/**
 * @module runtime/pool-gate — what the claims of one isolate have learnt about a swarm server's pool of unclaimed
 * episodes, so that only one of them asks while the pool is empty (issue 23: "claims sent when the pool can have an
 * episode"). Episodes are registered about a second after each edge to ROLLING; until then every claim is answered
 * "No available episodes". Without a gate every invocation waiting for that moment polls on its own (32 invocations
 * at 100 ms are 320 empty claims a second); with it, one invocation (the prober) keeps polling at the same pace and
 * the others wait for its answer, then claim together: the first claim after registration is as quick as before and
 * the server sees one poller per isolate instead of one per episode.
 *
 * Scope: module state, so one isolate. In local workerd all invocations share one; on the platform the invocations an
 * isolate serves concurrently (the messages of one queue batch, concurrent batches on a warm isolate) share it, and
 * isolates do not share anything: each has its own prober. Nothing here decides an outcome — a waiter released by a
 * success still claims for itself and learns its own answer; the gate only orders who asks when.
 */

/** What the pool is believed to hold after the last answer: episodes, none, or not known (nothing heard, or an answer that says nothing about it). */
export type PoolBelief = "has" | "empty" | "unknown";

/** How long a claimed episode makes the pool believed to have more (ms): the claims it releases go within milliseconds; a belief older than this is no belief (the next wave, after a weight sync, finds the pool empty until registration). */
export const HAS_EPISODES_TTL_MS = 1_000;

/** A turn whose holder showed no sign of life this long (wall clock, ms) is taken over: a holder answers at least once per back-off step (≤ 6 s). */
export const HELD_STALE_MS = 30_000;

/** One pool's gate: the belief, whether an invocation holds the turn to ask, and the invocations waiting for it. */
export class PoolGate {
  #belief: PoolBelief = "unknown";
  #hasUntilMs = 0;
  /** epoch ms of the first empty answer of the current empty spell (null when the pool is not believed empty) */
  emptySinceMs: number | null = null;
  #held = false;
  /** which holder holds the turn (a release by an older one, after its turn was taken over, is ignored) */
  #holder = 0;
  /** wall-clock ms of the holder's last sign of life (its take or an answer it learnt) */
  #activeAtMs = 0;
  #wake: Array<() => void> = [];
  #claimers = 0;

  /** The belief at `nowMs` (a "has" past {@link HAS_EPISODES_TTL_MS} is "unknown"). */
  belief(nowMs: number): PoolBelief {
    return this.#belief === "has" && nowMs > this.#hasUntilMs ? "unknown" : this.#belief;
  }

  /** A claim of this isolate starts using the gate (pair with {@link leave}). */
  enter(): void {
    this.#claimers++;
  }

  /** A claim is done with the gate; when none is left the belief is forgotten (the next claimers start from "unknown"). */
  leave(): void {
    this.#claimers = Math.max(0, this.#claimers - 1);
    if (this.#claimers > 0) return;
    this.#belief = "unknown";
    this.emptySinceMs = null;
  }

  /** True when an invocation holds the turn (it is asking, or probing between asks). */
  get held(): boolean {
    return this.#held;
  }

  /**
   * Takes the turn when it is needed and free. A pool believed to have episodes needs no turn: everyone may claim. A
   * turn whose holder showed no sign of life for {@link HELD_STALE_MS} (an invocation cancelled without its `finally`)
   * is taken over.
   * @returns "free" (claim without the turn), a holder number (this caller holds the turn now: release it with
   *   {@link release}), or "busy" (another invocation holds it: wait with {@link changed} and ask again)
   */
  take(nowMs: number): "free" | "busy" | number {
    if (this.belief(nowMs) === "has") return "free";
    if (this.#held && Date.now() - this.#activeAtMs < HELD_STALE_MS) return "busy";
    this.#held = true;
    this.#activeAtMs = Date.now();
    return ++this.#holder;
  }

  /** Gives the turn back (when `holder` still holds it) and wakes every waiter (the first to run takes it, unless the pool is believed to have episodes). */
  release(holder: number): void {
    if (holder !== this.#holder) return;
    this.#held = false;
    this.#wakeAll();
  }

  /**
   * Records one claim answer and wakes the waiters: a claimed episode means the pool has episodes (they claim
   * together), "No available episodes" that it is empty (they look at their deadlines and keep waiting), anything
   * else that nothing is known (one of them asks next).
   */
  learn(answer: "claimed" | "empty" | "other", nowMs: number): void {
    this.#activeAtMs = Date.now();
    if (answer === "empty") {
      if (this.#belief !== "empty") this.emptySinceMs = nowMs;
      this.#belief = "empty";
      this.#wakeAll(); // the waiters look at their deadlines, then wait again
      return;
    }
    this.#belief = answer === "claimed" ? "has" : "unknown";
    this.#hasUntilMs = nowMs + HAS_EPISODES_TTL_MS;
    this.emptySinceMs = null;
    this.#wakeAll();
  }

  /** Resolves at the next release or answer learnt, or after {@link HELD_STALE_MS} of wall-clock time (then the turn may be taken over). */
  changed(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, HELD_STALE_MS);
      this.#wake.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #wakeAll(): void {
    const wake = this.#wake;
    this.#wake = [];
    for (const w of wake) w();
  }
}

const gates = new Map<string, PoolGate>();

/** The gate of the pool of `serverUrl` for episodes of `episodeType` (created on first use; kept for the isolate's life). */
export function poolGate(serverUrl: string, episodeType: string): PoolGate {
  const key = `${episodeType} ${serverUrl}`;
  let gate = gates.get(key);
  if (!gate) {
    gate = new PoolGate();
    gates.set(key, gate);
  }
  return gate;
}
