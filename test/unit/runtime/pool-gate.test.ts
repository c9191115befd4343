/**
 * The pool gate (runtime/pool-gate.ts) through `claimAll` against the in-process emulator on a real clock: many claims
 * of one isolate waiting for the engine to register its episodes send one claim at a time while the pool is empty,
 * then all claim once one found an episode; every claim still gets its own episode and its step.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SwarmClient } from "../../../src/client/index.ts";
import { createEmulator, type Emulator } from "../../../src/emulator/index.ts";
import { claimAll, type ClaimAllOptions } from "../../../src/runtime/claims.ts";
import { HELD_STALE_MS, PoolGate } from "../../../src/runtime/pool-gate.ts";

const URL_OF = "http://127.0.0.1:10099";
let emu: Emulator | undefined;
afterEach(() => emu?.close());

/** A client over the in-process emulator that counts the claims in flight and their answers. */
function countingClient(e: Emulator) {
  const seen = { inFlight: 0, maxInFlightWhileEmpty: 0, empties: 0, claimed: 0 };
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const req = new Request(input, init);
    if (!req.url.endsWith("/claim_episode")) return e.app.fetch(req);
    seen.inFlight++;
    if (e.engine.queue.length === 0) seen.maxInFlightWhileEmpty = Math.max(seen.maxInFlightWhileEmpty, seen.inFlight);
    try {
      const res = await e.app.fetch(req);
      const body = (await res.clone().json()) as { success: boolean };
      if (body.success) seen.claimed++;
      else seen.empties++;
      return res;
    } finally {
      seen.inFlight--;
    }
  };
  return { client: new SwarmClient({ baseURL: URL_OF, fetch, logger: { info: () => {}, warn: () => {}, error: () => {} } }), seen };
}

/** Starts the engine and returns at its edge to ROLLING (polled every 10 ms: registration follows later). */
async function rolling(client: SwarmClient): Promise<void> {
  await client.requestEngineStart();
  while ((await client.getEngineStatus()).status !== "ENGINE.ROLLING") await new Promise((r) => setTimeout(r, 10));
}

const options = (deadlineMs: number): ClaimAllOptions => ({
  episodeType: "train",
  discardEpisodeTimeoutSeconds: 60,
  throttlePolicy: null,
  deadlineAtMs: Date.now() + deadlineMs,
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  random: () => Math.random(),
  fastPollMs: 20,
});

describe("pool gate: claims waiting for registration", () => {
  it("eight claims of one isolate before registration: one claim in flight while the pool is empty, then each gets its own episode and step", async () => {
    emu = createEmulator({ profile: "fast", timings: { registrationDelayMs: 1_500 } });
    const { client, seen } = countingClient(emu);
    await client.syncTrainConfig("ajet:\n  data:\n    train_batch_size: 2\n  rollout:\n    num_repeat: 4\n    max_env_worker: 8\n");
    await rolling(client);
    expect(emu.engine.queue).toHaveLength(0); // registered 1.5 s after the edge

    const results = await Promise.all(Array.from({ length: 8 }, () => claimAll([{ name: "default", client }], options(20_000))));

    const held = results.flatMap((r) => ("held" in r ? r.held : []));
    expect(held).toHaveLength(8);
    expect(new Set(held.map((h) => h.episodeUuid)).size).toBe(8);
    expect(seen.claimed).toBe(8);
    expect(seen.empties).toBeGreaterThan(0); // the claims did start before registration
    expect(seen.maxInFlightWhileEmpty).toBe(1);
    // the prober's step is read after its claim (its asks went without a status read); the others read it alongside
    for (const h of held) expect(h.globalStep === undefined || h.globalStep === emu.engine.globalStep).toBe(true);
    expect(held.filter((h) => h.globalStep === undefined).length).toBeLessThanOrEqual(1);
  });

  it("the claims give up at their own deadline while another holds the turn (noEpisodes), one claim in flight the whole time", async () => {
    emu = createEmulator({ profile: "fast", timings: { registrationDelayMs: 60_000 } });
    const { client, seen } = countingClient(emu);
    await client.syncTrainConfig("ajet:\n  data:\n    train_batch_size: 2\n  rollout:\n    num_repeat: 4\n    max_env_worker: 8\n");
    await rolling(client);

    const results = await Promise.all(Array.from({ length: 4 }, () => claimAll([{ name: "default", client }], options(400))));

    for (const r of results) expect(r).toMatchObject({ failure: { kind: "noEpisodes", swarm: "default" } });
    expect(seen.maxInFlightWhileEmpty).toBe(1);
    expect(seen.claimed).toBe(0);
  });
});

describe("PoolGate", () => {
  it("single flight until an episode is found; a found episode frees everyone for a while; the belief is forgotten when the last claimer leaves", () => {
    const g = new PoolGate();
    g.enter();
    g.enter();
    const holder = g.take(0);
    expect(holder).toBeTypeOf("number");
    expect(g.take(0)).toBe("busy");
    g.learn("empty", 10);
    expect(g.emptySinceMs).toBe(10);
    expect(g.take(20)).toBe("busy");
    g.learn("claimed", 30);
    expect(g.belief(30)).toBe("has");
    expect(g.take(31)).toBe("free");
    expect(g.belief(30 + 1_001)).toBe("unknown");
    g.release(holder as number);
    g.learn("empty", 40);
    g.leave();
    expect(g.belief(41)).toBe("empty");
    g.leave();
    expect(g.belief(42)).toBe("unknown");
    expect(g.emptySinceMs).toBeNull();
  });

  it("a turn whose holder went silent (cancelled without its finally) is taken over; the old holder's late release changes nothing", () => {
    const g = new PoolGate();
    const t0 = Date.now();
    const now = vi.spyOn(Date, "now").mockReturnValue(t0);
    try {
      const old = g.take(0) as number;
      expect(g.take(0)).toBe("busy");
      now.mockReturnValue(t0 + HELD_STALE_MS + 1);
      const next = g.take(0);
      expect(next).toBeTypeOf("number");
      expect(next).not.toBe(old);
      g.release(old);
      expect(g.take(0)).toBe("busy");
      g.release(next as number);
      expect(g.held).toBe(false);
    } finally {
      now.mockRestore();
    }
  });
});
