/**
 * The call journal of the handover (runtime/call-journal, docs/design/long-episodes.md): a holder records each LLM
 * call it sends with its answer (a streamed body whole, failures as errors); the next holder's replay answers the
 * same requests from it without sending them, stops a replay that asks for something else while entries are unused
 * (`replay_diverged`), and sends only once the journal is used up. The gate holds new calls (never sent) and `idle`
 * waits for the calls already sent.
 */
import { describe, expect, it } from "vitest";
import { CallJournal, REPLAY_DIVERGED } from "../../../src/runtime/call-journal.ts";
import { startHandover } from "../../../src/runtime/handover.ts";

const URL_A = "http://swarm.test/v1/chat/completions";

/** A fetch that answers `answer(body)` and counts what it sent. */
function server(answer: (body: string) => Response | Promise<Response>) {
  const sent: string[] = [];
  const fetch = async (_input: string | URL | Request, init?: RequestInit) => {
    sent.push(String(init?.body));
    return answer(String(init?.body));
  };
  return { sent, fetch };
}

const post = (body: string, signal?: AbortSignal): RequestInit => ({ method: "POST", body, ...(signal ? { signal } : {}) });

/** Waits until `check()` holds (the journal keys each call with an async SHA-256 before sending it), at most `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`still not true after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

describe("CallJournal: record, then replay", () => {
  it("records each answered call (status, headers, whole body) and a later holder's replay answers them without sending", async () => {
    const first = server((b) => new Response(`answer to ${b}`, { status: 200, headers: { "content-type": "application/json", "x-kept": "yes" } }));
    const rec = new CallJournal();
    const f1 = rec.wrap("default", first.fetch);
    expect(await (await f1(URL_A, post("one"))).text()).toBe("answer to one");
    expect(await (await f1(URL_A, post("two"))).text()).toBe("answer to two");
    await rec.idle();
    const entries = rec.entries();
    expect(entries.map((e) => [e.status, e.body])).toEqual([[200, "answer to one"], [200, "answer to two"]]);
    expect(entries[0]!.headers).toContainEqual(["x-kept", "yes"]);

    const second = server((b) => new Response(`live ${b}`));
    const replay = new CallJournal(entries);
    const f2 = replay.wrap("default", second.fetch);
    const r1 = await f2(URL_A, post("one"));
    expect([r1.status, r1.headers.get("x-kept"), await r1.text()]).toEqual([200, "yes", "answer to one"]);
    expect(await (await f2(URL_A, post("two"))).text()).toBe("answer to two");
    expect(second.sent).toEqual([]); // no call twice
    expect([replay.unused, replay.replayed]).toEqual([0, 2]);
    // the journal used up, the next request goes out and is journaled after the earlier ones
    expect(await (await f2(URL_A, post("three"))).text()).toBe("live three");
    await replay.idle();
    expect(second.sent).toEqual(["three"]);
    expect(replay.entries().map((e) => e.body)).toEqual(["answer to one", "answer to two", "live three"]);
  });

  it("the same request twice (a retry after a 429) is answered in order: the 429 first, then the 200", async () => {
    let n = 0;
    const first = server(() => (n++ === 0 ? new Response("slow down", { status: 429 }) : new Response("ok")));
    const rec = new CallJournal();
    const f1 = rec.wrap("default", first.fetch);
    expect((await f1(URL_A, post("same"))).status).toBe(429);
    expect((await f1(URL_A, post("same"))).status).toBe(200);
    await rec.idle();
    const replay = new CallJournal(rec.entries());
    const f2 = replay.wrap("default", server(() => new Response("never")).fetch);
    expect((await f2(URL_A, post("same"))).status).toBe(429);
    expect(await (await f2(URL_A, post("same"))).text()).toBe("ok");
  });

  it("a streamed answer is journaled whole once its body ended; a failed call is replayed as the same error", async () => {
    const enc = new TextEncoder();
    let push!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({ start: (c) => void (push = c) });
    const rec = new CallJournal();
    const f1 = rec.wrap("default", async (_i, init) => (String(init?.body) === "boom" ? Promise.reject(new TypeError("fetch failed")) : new Response(stream, { headers: { "content-type": "text/event-stream" } })));
    const res = await f1(URL_A, post("stream"));
    push.enqueue(enc.encode("data: a\n\n"));
    expect(rec.inFlight).toBe(1);
    let idle = false;
    void rec.idle().then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(idle).toBe(false); // the body is still open: the call is in flight
    push.enqueue(enc.encode("data: [DONE]\n\n"));
    push.close();
    expect(await res.text()).toBe("data: a\n\ndata: [DONE]\n\n");
    await rec.idle();
    await expect(f1(URL_A, post("boom"))).rejects.toThrow("fetch failed");
    const replay = new CallJournal(rec.entries());
    const f2 = replay.wrap("default", () => Promise.reject(new Error("never sent")));
    const again = await f2(URL_A, post("stream"));
    expect([again.headers.get("content-type"), await again.text()]).toEqual(["text/event-stream", "data: a\n\ndata: [DONE]\n\n"]);
    const err = await f2(URL_A, post("boom")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe("fetch failed");
  });

  it("a replay that asks for a request the journal does not hold while entries are unused diverges: stopped, nothing sent", async () => {
    const rec = new CallJournal();
    await (await rec.wrap("default", server((b) => new Response(b)).fetch)(URL_A, post("one"))).text();
    await rec.idle();
    const stops: string[] = [];
    const live = server(() => new Response("never"));
    const replay = new CallJournal(rec.entries(), (cause) => stops.push(cause));
    await expect(replay.wrap("default", live.fetch)(URL_A, post("other"))).rejects.toMatchObject({ reason: REPLAY_DIVERGED });
    expect(stops).toEqual([REPLAY_DIVERGED]);
    expect(live.sent).toEqual([]);
    expect(replay.unused).toBe(1);
    // the key covers the swarm: the same body to another swarm is another request
    await expect(replay.wrap("other", live.fetch)(URL_A, post("one"))).rejects.toMatchObject({ reason: REPLAY_DIVERGED });
  });
});

describe("CallJournal: the gate", () => {
  it("after the gate closes a new call is held (never sent) and rejects when the episode stops; idle waits for the open call", async () => {
    let finish!: (r: Response) => void;
    const live = server(() => new Promise<Response>((r) => (finish = r)));
    const journal = new CallJournal();
    const f = journal.wrap("default", live.fetch);
    const open = f(URL_A, post("open"));
    await until(() => live.sent.length === 1); // sent before the gate closes
    journal.closeGate();
    const stop = new AbortController();
    const held = f(URL_A, post("after the gate", stop.signal));
    let idle = false;
    void journal.idle().then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 5));
    expect([live.sent, idle]).toEqual([["open"], false]);
    finish(new Response("done"));
    expect(await (await open).text()).toBe("done");
    await journal.idle();
    expect(journal.entries().map((e) => e.body)).toEqual(["done"]);
    stop.abort(new Error("episode over"));
    await expect(held).rejects.toThrow("episode over");
    expect(live.sent).toEqual(["open"]);
  });
});

describe("startHandover", () => {
  /** A clock the test moves; `sleep` resolves when it passes the wake time (or at once when aborted). */
  function fakeTime() {
    let now = 0;
    const sleepers: Array<{ at: number; wake: () => void }> = [];
    return {
      now: () => now,
      sleep: (ms: number, signal?: AbortSignal) =>
        new Promise<void>((wake) => {
          sleepers.push({ at: now + ms, wake });
          signal?.addEventListener("abort", () => wake(), { once: true });
        }),
      async advance(ms: number) {
        now += ms;
        for (const s of sleepers.splice(0)) if (s.at <= now) s.wake(); else sleepers.push(s);
        for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
      },
    };
  }
  const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

  it("at the gate it waits for the open call, then hands over the journal with that call's answer in it", async () => {
    const t = fakeTime();
    let finish!: (r: Response) => void;
    const journal = new CallJournal();
    const open = journal.wrap("default", () => new Promise<Response>((r) => (finish = r)))(URL_A, post("open"));
    await until(() => journal.inFlight === 1); // its key is hashed, then it is sent
    const handed: string[][] = [];
    const h = startHandover({ journal, gateAtMs: 10_000, hand: async (entries) => (handed.push(entries.map((e) => e.body ?? "")), "handed") }, { lastAtMs: 15_000, now: t.now, sleep: t.sleep, log, stopped: () => false });
    await t.advance(10_000);
    expect(handed).toEqual([]); // the call is still open
    await t.advance(2_000);
    finish(new Response("late answer"));
    await (await open).text();
    await t.advance(0);
    expect(handed).toEqual([["late answer"]]);
    await h.handed;
    expect(await h.settled()).toBe("handed");
  });

  it("a call still open 1 s before the hard stop: no handover (the hard stop aborts the attempt); a declined handover lets the holder go on", async () => {
    const t = fakeTime();
    const journal = new CallJournal();
    void journal.wrap("default", () => new Promise<Response>(() => undefined))(URL_A, post("never ends"));
    await until(() => journal.inFlight === 1);
    let asked = 0;
    const h = startHandover({ journal, gateAtMs: 10_000, hand: async () => (asked++, "handed") }, { lastAtMs: 15_000, now: t.now, sleep: t.sleep, log, stopped: () => false });
    await t.advance(10_000);
    await t.advance(4_000);
    h.cancel();
    expect([asked, await h.settled()]).toEqual([0, null]);

    const t2 = fakeTime();
    const d = startHandover({ journal: new CallJournal(), gateAtMs: 1_000, hand: async () => "declined" }, { lastAtMs: 5_000, now: t2.now, sleep: t2.sleep, log, stopped: () => false });
    await t2.advance(1_000);
    expect(await d.settled()).toBeNull();
  });

  it("a failed handover RPC counts as unknown: the holder sends nothing more", async () => {
    const t = fakeTime();
    const h = startHandover({ journal: new CallJournal(), gateAtMs: 1_000, hand: () => Promise.reject(new Error("network lost")) }, { lastAtMs: 5_000, now: t.now, sleep: t.sleep, log, stopped: () => false });
    await t.advance(1_000);
    await h.handed;
    expect(await h.settled()).toBe("unknown");
  });
});
