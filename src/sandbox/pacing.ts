/**
 * @module sandbox/pacing — how fast a run may create sandboxes (pure; time and the random draw are inputs): a cap
 * on live sandboxes (destroys not yet confirmed count) and a token bucket of `createsPerSecond` with a one-second
 * burst, each go delayed by a jitter that spreads a burst over that second (strands-env #204: un-jittered bursts
 * re-hit the spike; ../shared/spec/sandbox-notes.md §3). The run's ledger (its Durable Object, or the memory ledger
 * of tests and the benchmark) keeps the state and answers each intent with {@link paceIntent}.
 */
import type { SandboxIntentAnswer } from "../port/sandbox.ts";

/** The bucket: tokens left at `atMs` (epoch ms). */
export interface PacerState {
  tokens: number;
  atMs: number;
}

/** A fresh, full bucket at `nowMs`. */
export function freshPacer(nowMs: number, createsPerSecond: number): PacerState {
  return { tokens: burstOf(createsPerSecond), atMs: nowMs };
}

/** The bucket's size: one second of creations, at least one. */
export function burstOf(createsPerSecond: number): number {
  return Math.max(1, createsPerSecond);
}

/** What {@link paceIntent} reads. */
export interface PaceInput {
  nowMs: number;
  /** sandboxes of the run recorded and not confirmed destroyed */
  live: number;
  maxLive: number;
  createsPerSecond: number;
  /** a uniform draw in [0, 1) */
  u: number;
}

/** Longest pause before an intent at the live cap asks again, ms (half of it is jitter). */
export const AT_CAP_RETRY_MS = 1_000;

/**
 * Answers one intent: `go` (a token spent; the delay spreads a burst over a second: none when the bucket is full,
 * up to 1 s when it is nearly empty) or `wait` (at the live cap, or no token: ask again when one is due, plus
 * jitter). Never `stale`: whether the attempt is current is the ledger's question.
 * @returns the answer and the bucket after it
 */
export function paceIntent(state: PacerState, input: PaceInput): { answer: Extract<SandboxIntentAnswer, { status: "go" | "wait" }>; state: PacerState } {
  const burst = burstOf(input.createsPerSecond);
  const elapsed = Math.max(0, input.nowMs - state.atMs);
  const tokens = Math.min(burst, state.tokens + (elapsed / 1000) * input.createsPerSecond);
  const refilled = { tokens, atMs: Math.max(state.atMs, input.nowMs) };
  if (input.live >= input.maxLive) {
    return {
      answer: { status: "wait", retryInMs: Math.round(AT_CAP_RETRY_MS * (0.5 + input.u / 2)), reason: `at the run's cap of ${input.maxLive} live sandboxes (sandbox.maxLive)` },
      state: refilled,
    };
  }
  if (tokens < 1) {
    const dueMs = ((1 - tokens) / input.createsPerSecond) * 1000;
    return {
      answer: { status: "wait", retryInMs: Math.ceil(dueMs + (input.u * 1000) / input.createsPerSecond), reason: `at the run's create rate of ${input.createsPerSecond}/s (sandbox.createsPerSecond)` },
      state: refilled,
    };
  }
  const left = tokens - 1;
  const used = 1 - left / burst;
  return { answer: { status: "go", delayMs: Math.round(input.u * used * 1000) }, state: { tokens: left, atMs: refilled.atMs } };
}
