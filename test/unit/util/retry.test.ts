/**
 * The one retry of Durable Object and service calls (util/retry, issue 17): the platform's `retryable` and
 * `overloaded` flags decide; an overloaded object is never sent the call again; and the episode port
 * (runtime/episode-port `twice`) sends an idempotent report once more only when the flags allow.
 */
import { describe, expect, it } from "vitest";
import type { SchedulerPort } from "../../../src/port/index.ts";
import { EpisodePort, RPC_RETRY_DELAY_MS } from "../../../src/runtime/episode-port.ts";
import { isRetryable, retrying, validateRetryOptions } from "../../../src/util/retry.ts";

/** An error as the platform throws it: a message and its flags. */
const platformError = (flags: { retryable?: boolean; overloaded?: boolean }) => Object.assign(new Error("Durable Object error"), flags);

describe("isRetryable", () => {
  it("follows the platform's flags: retryable yes, overloaded never (even when also retryable), retryable false no", () => {
    expect(isRetryable(platformError({ retryable: true }))).toBe(true);
    expect(isRetryable(platformError({ retryable: true, overloaded: true }))).toBe(false);
    expect(isRetryable(platformError({ overloaded: true }), true)).toBe(false);
    expect(isRetryable(platformError({ retryable: false }), true)).toBe(false);
  });

  it("an error without flags is retried only for an idempotent call that says so", () => {
    expect(isRetryable(new Error("thrown by the callee"))).toBe(false);
    expect(isRetryable(new Error("thrown by the callee"), true)).toBe(true);
    expect(isRetryable("a string", true)).toBe(true);
    expect(isRetryable(null)).toBe(false);
  });
});

describe("retrying", () => {
  const sleeps: number[] = [];
  const sleep = async (ms: number) => void sleeps.push(ms);

  it("sends again after a retryable error, pausing delayMs, up to maxAttempts; answers with the number of sends", async () => {
    sleeps.length = 0;
    let n = 0;
    const seen: number[] = [];
    const out = await retrying(
      async (attempt) => {
        seen.push(attempt);
        if (++n < 3) throw platformError({ retryable: true });
        return "ok";
      },
      { maxAttempts: 3, delayMs: 250, sleep, onRetry: (_err, attempt) => seen.push(-attempt) },
    );
    expect(out).toEqual({ value: "ok", attempts: 3 });
    expect(seen).toEqual([1, -1, 2, -2, 3]);
    expect(sleeps).toEqual([250, 250]);
  });

  it("throws the last error when the sends are used up, and at once for an overloaded object", async () => {
    let n = 0;
    await expect(retrying(async () => { n++; throw platformError({ retryable: true }); }, { maxAttempts: 2, delayMs: 0, sleep })).rejects.toMatchObject({ retryable: true });
    expect(n).toBe(2);
    n = 0;
    await expect(retrying(async () => { n++; throw platformError({ retryable: true, overloaded: true }); }, { maxAttempts: 5, delayMs: 0, sleep })).rejects.toMatchObject({ overloaded: true });
    expect(n).toBe(1);
  });

  it("refuses options that could not work, before any send", async () => {
    expect(() => validateRetryOptions({ maxAttempts: 0, delayMs: 0 })).toThrow("maxAttempts must be a whole number ≥ 1, got 0");
    expect(() => validateRetryOptions({ maxAttempts: 2, delayMs: -1 })).toThrow("delayMs must be a finite number ≥ 0, got -1");
    let called = false;
    await expect(retrying(async () => (called = true), { maxAttempts: 1.5, delayMs: 0, sleep })).rejects.toThrow(RangeError);
    expect(called).toBe(false);
  });
});

describe("the episode port's second send", () => {
  const log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

  function portThrowing(errors: unknown[]): { port: SchedulerPort; calls: () => number } {
    let calls = 0;
    const reported = async () => {
      calls++;
      const err = errors.shift();
      if (err !== undefined) throw err;
      return { status: "applied" } as const;
    };
    const port = { episodeClaimed: reported, claimFailed: reported, episodeOutcomeRecorded: reported, episodeReported: reported, getTask: async () => ({}) } as unknown as SchedulerPort;
    return { port, calls: () => calls };
  }

  it("resends a report once after a reset or an unflagged failure (idempotent by episode and attempt)", async () => {
    for (const err of [platformError({ retryable: true }), new Error("network connection lost")]) {
      const slept: number[] = [];
      const { port, calls } = portThrowing([err]);
      const sent = await new EpisodePort(port, undefined, { log, sleep: async (ms) => void slept.push(ms) }).twice((p) => p.episodeReported({ episodeKey: "k", attempt: 1, result: "ended" }));
      expect(sent).toEqual({ answer: { status: "applied" }, resent: true });
      expect({ calls: calls(), slept }).toEqual({ calls: 2, slept: [RPC_RETRY_DELAY_MS] });
    }
  });

  it("never resends to an overloaded object, nor after an error the platform says is not retryable", async () => {
    for (const err of [platformError({ overloaded: true }), platformError({ retryable: false })]) {
      const { port, calls } = portThrowing([err]);
      await expect(new EpisodePort(port, undefined, { log, sleep: async () => {} }).twice((p) => p.episodeReported({ episodeKey: "k", attempt: 1, result: "ended" }))).rejects.toBe(err);
      expect(calls()).toBe(1);
    }
  });
});
