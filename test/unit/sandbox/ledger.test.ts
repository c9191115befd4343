/**
 * The sandbox ledger's rules (sandbox/ledger), as the run's object applies them: intent before create, release,
 * the sweep of rows whose attempt is over (retried with a back-off until confirmed, a recheck after destroying a row
 * no attempt released), counts and seconds per window; and the memory ledger over them: a group of G attempts with N
 * failures retried gives G + N creates and G + N destroys, and injected destroy errors leave 0 live after recovery.
 */
import { describe, expect, it } from "vitest";
import type { SandboxIntent } from "../../../src/port/sandbox.ts";
import { afterSweep, answerIntent, applyRelease, nextSweepAt, sandboxCounts, sweepDue, SWEEP_RECHECK_MS, type SandboxRow } from "../../../src/sandbox/ledger.ts";
import { MemorySandboxLedger } from "../../../src/sandbox/memory-ledger.ts";
import { freshPacer } from "../../../src/sandbox/pacing.ts";
import type { SandboxBackend } from "../../../src/sandbox/backend.ts";

const intent = (i: number, attempt = 1): SandboxIntent => ({ episodeKey: `g/0/0#${i}`, attempt, dispatchId: 1, sandboxId: `sb-${i}-${attempt}`, backend: "local", instanceType: "lite" });
const opts = { nowMs: 1_000, maxLive: 2, createsPerSecond: 100, u: 0, window: 0 };

function recorded(i: number, nowMs = 1_000): SandboxRow {
  return answerIntent(new Map(), freshPacer(0, 100), intent(i), { ...opts, nowMs }).row!;
}

describe("intent", () => {
  it("records the row before any create; a second intent for it goes without a new row; the live cap waits", () => {
    const rows = new Map<string, SandboxRow>();
    let pacer = freshPacer(0, 100);
    for (const i of [0, 1]) {
      const r = answerIntent(rows, pacer, intent(i), opts);
      expect(r.answer.status).toBe("go");
      expect(r.row).toMatchObject({ sandboxId: `sb-${i}-1`, state: "live", window: 0, recordedAtMs: 1_000 });
      rows.set(r.row!.sandboxId, r.row!);
      pacer = r.pacer;
    }
    expect(answerIntent(rows, pacer, intent(0), opts)).toMatchObject({ answer: { status: "go", delayMs: 0 }, row: null });
    expect(answerIntent(rows, pacer, intent(2), opts).answer).toMatchObject({ status: "wait", reason: expect.stringContaining("sandbox.maxLive") });
  });
});

describe("release and sweep", () => {
  it("a confirmed release closes the row; an unconfirmed one leaves it to the sweep", () => {
    const row = recorded(0);
    const closed = applyRelease(row, { episodeKey: row.episodeKey, attempt: 1, sandboxId: row.sandboxId, end: "destroyed", seconds: 3.5, commands: 4 }, 5_000)!;
    expect(closed).toMatchObject({ state: "destroyed", end: "destroyed", seconds: 3.5, commands: 4, destroyedAtMs: 5_000 });
    expect(applyRelease(closed, { episodeKey: row.episodeKey, attempt: 1, sandboxId: row.sandboxId, end: "destroyed", seconds: 3.5, commands: 4 }, 6_000)).toBeNull();
    const open = applyRelease(row, { episodeKey: row.episodeKey, attempt: 1, sandboxId: row.sandboxId, end: "destroy_unconfirmed", seconds: 9, commands: 1 }, 5_000)!;
    expect(open).toMatchObject({ state: "live", end: "destroy_unconfirmed", nextSweepAtMs: 5_000 });
    expect(sweepDue([open], () => true, 5_000)).toEqual([open]);
  });

  it("sweeps only rows whose attempt is over; retries with a back-off; destroys an unreleased row once more after 20 s", () => {
    const a = recorded(0);
    const b = recorded(1);
    const over = (key: string) => key === a.episodeKey;
    expect(sweepDue([a, b], over, 2_000).map((r) => r.sandboxId)).toEqual([a.sandboxId]);
    const failed = afterSweep(a, false, 2_000, 0.5);
    expect(failed).toMatchObject({ state: "live", sweepTries: 1, nextSweepAtMs: 4_000 });
    expect(sweepDue([failed], over, 3_999)).toEqual([]);
    const again = afterSweep(failed, false, 4_000, 0.5);
    expect(again.nextSweepAtMs).toBe(8_000);
    const done = afterSweep(again, true, 8_000, 0.5);
    expect(done).toMatchObject({ state: "destroyed", end: "swept", recheck: true, nextSweepAtMs: 8_000 + SWEEP_RECHECK_MS, seconds: 7 });
    expect(nextSweepAt([done], 8_000)).toBe(8_000 + SWEEP_RECHECK_MS);
    expect(sweepDue([done], over, 8_000 + SWEEP_RECHECK_MS)).toEqual([done]);
    const final = afterSweep(done, true, 30_000, 0.5);
    expect(final).toMatchObject({ state: "destroyed", recheck: false, nextSweepAtMs: null });
    expect(nextSweepAt([final], 30_000)).toBeNull();
  });

  it("counts alive / created / destroyed / failed and seconds, per window", () => {
    const a = { ...recorded(0, 0), window: 0 };
    const b = { ...applyRelease({ ...recorded(1, 0), window: 0 }, { episodeKey: "g/0/0#1", attempt: 1, sandboxId: "sb-1-1", end: "create_failed", seconds: 1, commands: 0, failure: "refused" }, 1_000)! };
    const c = { ...applyRelease({ ...recorded(2, 0), window: 1 }, { episodeKey: "g/0/0#2", attempt: 1, sandboxId: "sb-2-1", end: "destroyed", seconds: 2.5, commands: 3 }, 2_000)! };
    const counts = sandboxCounts([a, b, c], 10_000);
    expect(counts.total).toEqual({ alive: 1, created: 3, destroyed: 2, failed: 1, seconds: 13.5 });
    expect(counts.byWindow).toEqual({ "0": { alive: 1, created: 2, destroyed: 1, failed: 1, seconds: 11 }, "1": { alive: 0, created: 1, destroyed: 1, failed: 0, seconds: 2.5 } });
  });
});

/** A backend that only tracks what exists; destroy fails while `failing` > 0. */
function trackingBackend() {
  const live = new Set<string>();
  const counts = { creates: 0, destroys: 0, failing: 0 };
  const backend = {
    name: "local",
    async create(id: string) {
      counts.creates++;
      live.add(id);
      return { created: true };
    },
    async destroy(id: string) {
      if (counts.failing > 0) {
        counts.failing--;
        throw new Error("destroy failed");
      }
      counts.destroys++;
      return { existed: live.delete(id) };
    },
  } as unknown as SandboxBackend;
  return { backend, live, counts };
}

describe("the memory ledger over the rules", () => {
  it("a group of G attempts with N failures retried: G + N creates, G + N destroys, 0 live", async () => {
    const G = 4;
    const N = 3;
    const ledger = new MemorySandboxLedger({ maxLive: 100, createsPerSecond: 1000, random: () => 0 });
    const { backend, live, counts } = trackingBackend();
    const attempts = [...Array.from({ length: G }, (_, i) => intent(i, 1)), ...Array.from({ length: N }, (_, i) => intent(i, 2))];
    for (const a of attempts) {
      await ledger.sandboxIntent(a);
      await backend.create(a.sandboxId, {} as never);
      // the consumer of a first attempt of repeats 0..N-1 dies: no release; the others release
      if (a.attempt === 2 || a.episodeKey >= `g/0/0#${N}`) {
        await backend.destroy(a.sandboxId);
        await ledger.sandboxReleased({ episodeKey: a.episodeKey, attempt: a.attempt, sandboxId: a.sandboxId, end: "destroyed", seconds: 1, commands: 1 });
      }
    }
    // every first attempt that died is over (retried): the sweep destroys them
    await ledger.sweep(backend, (_key, attempt) => attempt === 1);
    expect(live.size).toBe(0);
    expect(counts).toMatchObject({ creates: G + N, destroys: G + N });
    expect(ledger.live).toBe(0);
  });

  it("injected destroy errors: the sweep keeps trying until the backend confirms", async () => {
    let now = 0;
    const ledger = new MemorySandboxLedger({ maxLive: 100, createsPerSecond: 1000, now: () => now, random: () => 0.5 });
    const { backend, live, counts } = trackingBackend();
    for (let i = 0; i < 5; i++) {
      await ledger.sandboxIntent(intent(i));
      await backend.create(intent(i).sandboxId, {} as never);
    }
    counts.failing = 7;
    for (let pass = 0; pass < 20 && ledger.live > 0; pass++) {
      await ledger.sweep(backend, () => true);
      now += 5_000;
    }
    expect(ledger.live).toBe(0);
    expect(live.size).toBe(0);
  });
});
