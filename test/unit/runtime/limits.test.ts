import { describe, expect, it } from "vitest";
import { ConnectionLimiter, SubrequestBudget, SubrequestBudgetExceededError, guardFetch } from "../../../src/runtime/limits.ts";

/** A fetch whose responses stay pending until `open()` is called, so concurrency is observable without sleeps. */
function gatedFetch() {
  const gates: Array<() => void> = [];
  let inFlight = 0;
  let peak = 0;
  const fetch = async () => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise<void>((r) => gates.push(r));
    inFlight--;
    return new Response(JSON.stringify({ ok: true }), { headers: { "content-type": "application/json" } });
  };
  return { fetch, gates, peak: () => peak };
}

const settle = () => new Promise((r) => setImmediate(r));

describe("BC-48 at most 6 connections per invocation", () => {
  it("holds the 7th call until one body is read, and releases slots on read and on cancel", async () => {
    const limiter = new ConnectionLimiter();
    const g = gatedFetch();
    const f = guardFetch(g.fetch, limiter);
    const calls = Array.from({ length: 10 }, () => f("http://127.0.0.1/x"));
    await settle();
    expect(g.gates.length).toBe(6);
    expect(limiter.active).toBe(6);
    g.gates.shift()!();
    const first = await calls[0]!;
    await settle();
    expect(g.gates.length).toBe(5); // headers arrived but the body is unread: the slot is still held
    await first.json();
    await settle();
    expect(g.gates.length).toBe(6); // reading the body released the slot to the 7th call
    g.gates.shift()!();
    const second = await calls[1]!;
    await second.body!.cancel();
    await settle();
    expect(g.gates.length).toBe(6);
    for (const call of calls.slice(2)) {
      while (g.gates.length) g.gates.shift()!();
      await (await call).text();
      await settle();
    }
    expect(limiter.peak).toBe(6);
    expect(g.peak()).toBe(6);
    expect(limiter.active).toBe(0);
  });
  it("releases the slot when the fetch itself fails", async () => {
    const limiter = new ConnectionLimiter(1);
    const f = guardFetch(async () => { throw new TypeError("connection refused"); }, limiter);
    await expect(f("http://127.0.0.1/x")).rejects.toThrow("connection refused");
    expect(limiter.active).toBe(0);
  });
});

describe("BC-49 subrequest budget with reserves", () => {
  it("counts every call and refuses ordinary work that would eat a reservation", async () => {
    const budget = new SubrequestBudget(5);
    const end = budget.reserve(2, "end+report");
    const f = guardFetch(async () => new Response("ok"), new ConnectionLimiter(), budget);
    await (await f("http://127.0.0.1/a")).text();
    await (await f("http://127.0.0.1/b")).text();
    await (await f("http://127.0.0.1/c")).text();
    await expect(f("http://127.0.0.1/llm")).rejects.toBeInstanceOf(SubrequestBudgetExceededError);
    end.take();
    end.take();
    expect(budget.used).toBe(5);
    expect(budget.reserved).toBe(0);
  });
  it("returns unused reservations", () => {
    const budget = new SubrequestBudget(3);
    const r = budget.reserve(3);
    expect(budget.available).toBe(0);
    r.take();
    r.release();
    expect(budget.available).toBe(2);
    expect(() => budget.reserve(3)).toThrow(/budget exhausted/);
  });
});

describe("BC-48 the limiter never exceeds its cap under interleaving", () => {
  it("hands a released slot to the oldest waiter, not to a newcomer", async () => {
    const limiter = new ConnectionLimiter(2);
    const a = await limiter.acquire();
    const b = await limiter.acquire();
    const waiting = limiter.acquire(); // queued
    a(); // hands the slot to `waiting`
    const newcomer = limiter.acquire(); // must queue, not overtake
    const w = await waiting;
    expect(limiter.active).toBe(2);
    expect(limiter.peak).toBe(2);
    b();
    const n = await newcomer;
    expect(limiter.active).toBe(2);
    w();
    n();
    expect(limiter.active).toBe(0);
  });
  it("a waiter that gives up (signal) leaves the queue", async () => {
    const limiter = new ConnectionLimiter(1);
    const held = await limiter.acquire();
    const ctl = new AbortController();
    const gaveUp = limiter.acquire(ctl.signal);
    ctl.abort(new Error("stop"));
    await expect(gaveUp).rejects.toThrow("stop");
    held();
    expect(limiter.active).toBe(0);
  });
});
