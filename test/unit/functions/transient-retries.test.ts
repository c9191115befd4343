/**
 * LLM calls retried inside the episode: 429/5xx answers and refused connections are sent again (bounded, with the
 * back-off or the answer's Retry-After, whichever is longer), never past the idle budget; other answers, aborts and
 * guard errors are not retried.
 */
import { describe, expect, it } from "vitest";
import { EpisodeAbortError } from "../../../src/sdk/contract.ts";
import { retryAfterMs, withTransientRetries } from "../../../src/sdk/llm-guards.ts";

function clock(retryBeforeMs = Infinity) {
  const c = {
    nowMs: 0,
    waits: [] as number[],
    now: () => c.nowMs,
    sleep: async (ms: number) => void (c.waits.push(ms), (c.nowMs += ms)),
    random: () => 0.5,
    retryBefore: () => retryBeforeMs,
  };
  return c;
}

/** A fetch answering from a script: a status (with optional headers) or an error to throw, one entry per call. */
function scripted(script: Array<number | [number, Record<string, string>] | Error>) {
  const calls: string[] = [];
  const fetch = async (_input: string | URL | Request, init?: RequestInit) => {
    calls.push(String(init?.body));
    const step = script[Math.min(calls.length - 1, script.length - 1)]!;
    if (step instanceof Error) throw step;
    const [status, headers] = Array.isArray(step) ? step : [step, {}];
    return new Response(status === 200 ? '{"choices":[1]}' : "busy", { status, headers });
  };
  return { fetch, calls };
}

const post = { method: "POST", body: '{"model":"m"}' };

describe("withTransientRetries", () => {
  it("a 429 then a 200: sent twice with the same body, the 200 returned", async () => {
    const c = clock();
    const s = scripted([429, 200]);
    const res = await withTransientRetries(s.fetch, c)("http://llm/v1/chat/completions", post);
    expect(res.status).toBe(200);
    expect(s.calls).toEqual(['{"model":"m"}', '{"model":"m"}']);
    expect(c.waits).toEqual([500]);
  });

  it("honours Retry-After when longer than the back-off", async () => {
    const c = clock();
    const s = scripted([[503, { "retry-after": "3" }], 200]);
    await withTransientRetries(s.fetch, c)("http://llm", post);
    expect(c.waits).toEqual([3_000]);
  });

  it("is bounded: after maxAttempts the last 500 is returned", async () => {
    const c = clock();
    const s = scripted([500]);
    const res = await withTransientRetries(s.fetch, { ...c, maxAttempts: 3 })("http://llm", post);
    expect(res.status).toBe(500);
    expect(s.calls).toHaveLength(3);
    expect(c.waits).toEqual([500, 1_000]);
  });

  it("does not wait past the idle budget: a Retry-After beyond it returns the 429 at once", async () => {
    const c = clock(10_000);
    const s = scripted([[429, { "retry-after": "30" }], 200]);
    const res = await withTransientRetries(s.fetch, c)("http://llm", post);
    expect(res.status).toBe(429);
    expect(s.calls).toHaveLength(1);
    expect(c.waits).toEqual([]);
  });

  it("retries a refused connection, but not a reset (the server may be generating: a resend is a ghost sample, llm-routes §5), an abort, a guard error or a 400", async () => {
    const refused = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } });
    const r1 = scripted([refused, 200]);
    expect((await withTransientRetries(r1.fetch, clock())("http://llm", post)).status).toBe(200);
    expect(r1.calls).toHaveLength(2);

    const reset = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNRESET" } });
    const r2 = scripted([reset, 200]);
    await expect(withTransientRetries(r2.fetch, clock())("http://llm", post)).rejects.toBe(reset);
    expect(r2.calls).toHaveLength(1);

    const aborted = scripted([new DOMException("stopped", "AbortError")]);
    await expect(withTransientRetries(aborted.fetch, clock())("http://llm", post)).rejects.toMatchObject({ name: "AbortError" });
    expect(aborted.calls).toHaveLength(1);

    const guard = scripted([new EpisodeAbortError("auth_error")]);
    await expect(withTransientRetries(guard.fetch, clock())("http://llm", post)).rejects.toBeInstanceOf(EpisodeAbortError);
    expect(guard.calls).toHaveLength(1);

    const bad = scripted([400, 200]);
    expect((await withTransientRetries(bad.fetch, clock())("http://llm", post)).status).toBe(400);
    expect(bad.calls).toHaveLength(1);
  });

  it("reads Retry-After as seconds, as an HTTP date, and retry-after-ms", () => {
    expect(retryAfterMs(new Headers({ "retry-after": "2" }), 0)).toBe(2_000);
    expect(retryAfterMs(new Headers({ "retry-after": new Date(5_000).toUTCString() }), 0)).toBe(5_000);
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250" }), 0)).toBe(250);
    expect(retryAfterMs(new Headers({}), 0)).toBeUndefined();
  });
});
