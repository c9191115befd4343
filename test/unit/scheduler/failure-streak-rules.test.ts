/**
 * The streak that stops a run on a plain bug (scheduler/failure-streak), rule by rule on its record: only the
 * function's own errors with a detail count; the same error (up to the episode's uuid in it) extends the streak, a
 * different one restarts it; the first failure of any cause is kept, never replaced; the run stops only after
 * DETERMINISTIC_FAILURE_ATTEMPTS identical errors with a retry among them, and never once an episode ended.
 */
import { describe, expect, it } from "vitest";
import { DETERMINISTIC_FAILURE_ATTEMPTS, isDeterministicFailure, noteFailedAttempt, type FailureRecord } from "../../../src/scheduler/failure-streak.ts";

const FN = "function_error";
const uuid = (n: number) => n.toString(16).padStart(32, "0");
const bug = (n: number) => `TypeError: no tool for episode ${uuid(n)} @ run functions/agent.ts:12:7`;
const fresh = (): FailureRecord => ({ firstFailure: null, failureStreak: null, totals: { episodesEnded: 0 } });

describe("the streak", () => {
  it("the same error naming different episode uuids is one error: the streak grows, keeping the first detail", () => {
    const run = fresh();
    noteFailedAttempt(run, FN, bug(1), 10, 1);
    noteFailedAttempt(run, FN, bug(2), 20, 2);
    expect(run.failureStreak).toEqual({ detail: bug(1), count: 2, retries: 1 });
  });

  it("a different error restarts it at 1, counting whether that attempt was a retry", () => {
    const run = fresh();
    noteFailedAttempt(run, FN, bug(1), 10, 1);
    noteFailedAttempt(run, FN, "RangeError: other @ run functions/agent.ts:30:1", 20, 2);
    expect(run.failureStreak).toEqual({ detail: "RangeError: other @ run functions/agent.ts:30:1", count: 1, retries: 1 });
    // a number that is not a uuid is part of the error: line 12 and line 13 are different errors
    const lines = fresh();
    noteFailedAttempt(lines, FN, "Error @ a.ts:12:7", 1, 1);
    noteFailedAttempt(lines, FN, "Error @ a.ts:13:7", 2, 1);
    expect(lines.failureStreak?.count).toBe(1);
  });

  it("other causes and failures without a detail neither extend nor restart it", () => {
    const run = fresh();
    noteFailedAttempt(run, FN, bug(1), 10, 1);
    noteFailedAttempt(run, "claim_timeout", "server did not answer", 20, 2);
    noteFailedAttempt(run, FN, undefined, 30, 2);
    expect(run.failureStreak).toEqual({ detail: bug(1), count: 1, retries: 0 });
  });

  it("a streak from an older row without a retry count still adds up its retries", () => {
    const run: FailureRecord = { ...fresh(), failureStreak: { detail: bug(1), count: 2 } };
    noteFailedAttempt(run, FN, bug(3), 10, 2);
    expect(run.failureStreak).toEqual({ detail: bug(1), count: 3, retries: 1 });
  });
});

describe("the first failure", () => {
  it("is the first failure with a detail, of any cause, and is never replaced", () => {
    const run = fresh();
    noteFailedAttempt(run, "claim_timeout", undefined, 5, 1); // no detail: nothing to show
    expect(run.firstFailure).toBeNull();
    noteFailedAttempt(run, "sandbox_error", "sandbox refused", 10, 1);
    noteFailedAttempt(run, FN, bug(1), 20, 1);
    expect(run.firstFailure).toEqual({ cause: "sandbox_error", detail: "sandbox refused", atMs: 10 });
  });
});

describe("when the run stops", () => {
  const streak = (count: number, retries: number, ended = 0): FailureRecord => ({ ...fresh(), failureStreak: { detail: "x", count, retries }, totals: { episodesEnded: ended } });

  it(`after ${DETERMINISTIC_FAILURE_ATTEMPTS} identical errors with a retry among them, not one fewer, not without a retry`, () => {
    expect(isDeterministicFailure(streak(DETERMINISTIC_FAILURE_ATTEMPTS, 1))).toBe(true);
    expect(isDeterministicFailure(streak(DETERMINISTIC_FAILURE_ATTEMPTS - 1, 1))).toBe(false);
    expect(isDeterministicFailure(streak(DETERMINISTIC_FAILURE_ATTEMPTS + 5, 0))).toBe(false);
    expect(isDeterministicFailure(fresh())).toBe(false);
    expect(isDeterministicFailure({ ...fresh(), failureStreak: { detail: "x", count: DETERMINISTIC_FAILURE_ATTEMPTS } })).toBe(false); // old row: no retries known
  });

  it("never once an episode ended, or while an end is recorded (its reward may be on the server)", () => {
    expect(isDeterministicFailure(streak(DETERMINISTIC_FAILURE_ATTEMPTS, 1, 1))).toBe(false);
    expect(isDeterministicFailure(streak(DETERMINISTIC_FAILURE_ATTEMPTS, 1), true)).toBe(false);
  });
});
