/**
 * @module test/unit/scheduler/laws — the scheduler's rules that are laws rather than examples, checked by fast-check on
 * random inputs and random event interleavings of the pure core (seeded: a failure prints the seed and a shrunk
 * event list that replays it):
 *  - an episode is ended at most once, whatever the order of claims, reports, lease expiries, resends and duplicates;
 *  - a batch window's plan never exceeds its quota: at most `batchSize` groups, at most each source's throttle cap;
 *  - a weighted mix converges to its ratios: after any number of windows each source is within one task of its share.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocateSlots, sourceCapIssues, throttleCap, type Decision, type EpisodeDispatch, type EpisodeResolve, type SchedulerEvent } from "../../../src/scheduler/index.ts";
import { Harness, specInput } from "./harness.ts";

/** One step of the world, chosen by fast-check; `pick` selects among what is pending, modulo its count. */
type Step =
  | { kind: "deliver"; pick: number; claimOk: boolean; redeliver: boolean }
  | { kind: "record"; pick: number; abort: boolean }
  | { kind: "report"; pick: number; result: "ended" | "expired" | "lost" }
  | { kind: "resend"; pick: number }
  | { kind: "resolve"; pick: number; found: boolean }
  | { kind: "late"; pick: number }
  | { kind: "tick"; seconds: number }
  | { kind: "engine"; restart: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("deliver" as const), pick: fc.nat(), claimOk: fc.boolean(), redeliver: fc.boolean() }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("record" as const), pick: fc.nat(), abort: fc.constantFrom(false, false, false, true) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("report" as const), pick: fc.nat(), result: fc.constantFrom("ended" as const, "ended" as const, "expired" as const, "lost" as const) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("resend" as const), pick: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("resolve" as const), pick: fc.nat(), found: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("late" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("tick" as const), seconds: fc.integer({ min: 0, max: 40 }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("tick" as const), seconds: fc.integer({ min: 100, max: 2500 }) }), weight: 1 }, // past leases
  { arbitrary: fc.record({ kind: fc.constant("engine" as const), restart: fc.boolean() }), weight: 1 },
);

interface Consumer {
  ref: { episodeKey: string; attempt: number };
  recorded: "end" | "abort" | null;
}

/**
 * A chaotic world around the core: an at-least-once queue, consumers that record and report in any order or die, a
 * DO outbox whose resolves answer `ended` or `expired`, reports that arrive twice, late consumers of old attempts,
 * clock jumps past every lease, and engine restarts (which wipe batches and re-run their episodes).
 */
class World {
  readonly queue: EpisodeDispatch[] = [];
  readonly consumers: Consumer[] = [];
  readonly recorded: Consumer[] = [];
  readonly resolves: EpisodeResolve[] = [];
  readonly sent: SchedulerEvent[] = [];
  /** refs (`key@attempt`) whose `ended` report the core applied, and how often */
  readonly endsApplied = new Map<string, number>();
  readonly violations: string[] = [];
  resolvesAsked = 0;
  /** reports the core answered `duplicate` (it had applied the same one) */
  duplicates = 0;
  private uuid = 0;
  private globalStep = 1;

  constructor(readonly h: Harness) {}

  apply(event: SchedulerEvent): Decision {
    const d = this.h.apply(event);
    if (d.ack.status === "duplicate") this.duplicates++;
    if (event.type === "episodeReported" && event.result === "ended" && d.ack.status === "applied") {
      const ref = `${event.episodeKey}@${event.attempt}`;
      this.endsApplied.set(ref, (this.endsApplied.get(ref) ?? 0) + 1);
      if (this.endsApplied.get(ref)! > 1) this.violations.push(`${ref} ended twice`);
    }
    for (const c of d.commands) {
      if (c.type === "dispatchEpisodes") this.queue.push(...c.episodes);
      if (c.type === "resolveOutbox") {
        for (const r of c.episodes) if (this.endsApplied.has(`${r.episodeKey}@${r.attempt}`)) this.violations.push(`resolve asked for ${r.episodeKey}@${r.attempt} after its end was applied`);
        this.resolves.push(...c.episodes);
        this.resolvesAsked += c.episodes.length;
      }
      if (c.type === "abortEpisodes") {
        for (const a of c.episodes) if (this.endsApplied.has(`${a.episodeKey}@${a.attempt}`)) this.violations.push(`abort asked for ${a.episodeKey}@${a.attempt} after its end was applied`);
      }
    }
    return d;
  }

  run(s: Step): void {
    const at = <T>(xs: T[], pick: number): T | undefined => (xs.length ? xs[pick % xs.length] : undefined);
    if (s.kind === "deliver") {
      const msg = at(this.queue, s.pick);
      if (!msg) return;
      if (!s.redeliver) this.queue.splice(this.queue.indexOf(msg), 1);
      const ref = { episodeKey: msg.episodeKey, attempt: msg.attempt, dispatchId: msg.dispatchId };
      if (!s.claimOk) return void this.apply({ type: "claimFailed", ...ref, kind: "noEpisodes" });
      const d = this.apply({ type: "episodeClaimed", ...ref, claims: [{ swarm: "default", episodeUuid: `u${this.uuid++}`, globalStep: this.globalStep }] });
      if (d.ack.status === "applied") this.consumers.push({ ref: { episodeKey: ref.episodeKey, attempt: ref.attempt }, recorded: null });
    } else if (s.kind === "record") {
      const c = at(this.consumers, s.pick);
      if (!c) return;
      this.consumers.splice(this.consumers.indexOf(c), 1);
      const outcome = s.abort ? { kind: "abort" as const, cause: "function_error" } : { kind: "end" as const, reward: 1 };
      if (this.apply({ type: "episodeOutcomeRecorded", ...c.ref, outcome }).ack.status === "applied") this.recorded.push({ ...c, recorded: outcome.kind });
    } else if (s.kind === "report") {
      const c = at(this.recorded, s.pick);
      if (!c) return;
      this.recorded.splice(this.recorded.indexOf(c), 1);
      const event: SchedulerEvent = { type: "episodeReported", ...c.ref, result: c.recorded === "end" ? s.result : "aborted" };
      this.sent.push(event);
      this.apply(event);
    } else if (s.kind === "resend") {
      const event = at(this.sent, s.pick);
      if (event) this.apply(event); // the same report again, later (a retried RPC)
    } else if (s.kind === "resolve") {
      const r = at(this.resolves, s.pick);
      if (!r) return;
      this.resolves.splice(this.resolves.indexOf(r), 1);
      const event: SchedulerEvent = { type: "episodeReported", episodeKey: r.episodeKey, attempt: r.attempt, result: s.found ? "ended" : "expired" };
      this.sent.push(event);
      this.apply(event);
    } else if (s.kind === "late") {
      // a consumer of an attempt the core already moved past wakes up and records an end
      const old = at(this.sent, s.pick);
      if (old && old.type === "episodeReported") this.apply({ type: "episodeOutcomeRecorded", episodeKey: old.episodeKey, attempt: old.attempt, outcome: { kind: "end", reward: 1 } });
    } else if (s.kind === "tick") {
      this.h.nowMs += s.seconds * 1000;
      this.apply({ type: "tick" });
    } else if (s.restart) {
      this.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.OFFLINE", globalStep: 0 });
      this.globalStep = 1;
      this.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: this.globalStep });
    } else {
      for (const status of ["ENGINE.ROLLING_POST", "ENGINE.WEIGHT_SYNCING"]) this.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: status, globalStep: this.globalStep });
      this.globalStep++;
      this.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: this.globalStep });
    }
  }
}

describe("an episode is ended at most once, whatever the order of reports, leases and resends", () => {
  it("no (episode, attempt) has two applied ends, and nothing is aborted or resolved once its end was applied", () => {
    const seen = { ends: 0, resolves: 0, duplicates: 0 };
    fc.assert(
      fc.property(
        fc.record({ batchSize: fc.integer({ min: 1, max: 3 }), numRepeat: fc.integer({ min: 1, max: 3 }), maxParallel: fc.integer({ min: 1, max: 6 }), maxAttempts: fc.integer({ min: 1, max: 3 }) }),
        fc.array(step, { minLength: 20, maxLength: 200, size: "max" }),
        (shape, steps) => {
          const h = new Harness(specInput({ ...shape, epochs: 1 }), { gsm8k: 6 }, false);
          const w = new World(h);
          w.apply({ type: "runStarted" });
          w.apply({ type: "engineStatusSeen", swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 1 });
          for (const s of steps) w.run(s);
          expect(w.violations).toEqual([]);
          seen.ends += w.endsApplied.size;
          seen.resolves += w.resolvesAsked;
          seen.duplicates += w.duplicates;
          // the run's books agree with the ends it applied (each counted once)
          const ended = [...h.state.episodes.values()].filter((r) => r.status === "ended").length;
          expect(ended).toBeLessThanOrEqual(w.endsApplied.size);
          expect(h.state.run.totals.episodesEnded).toBeLessThanOrEqual(w.endsApplied.size);
        },
      ),
      { numRuns: 100, seed: 24 },
    );
    // the worlds did reach what the law is about: applied ends, outbox resolves, reports that arrived twice
    expect(seen.ends).toBeGreaterThan(100);
    expect(seen.resolves).toBeGreaterThan(20);
    expect(seen.duplicates).toBeGreaterThan(100);
  });
});

describe("a batch window's plan never exceeds its quota", () => {
  it("every window opens at most batchSize groups and at most each source's throttle cap, whatever the weights and ratios", () => {
    const source = fc.record({ weight: fc.integer({ min: 1, max: 5 }), ratio: fc.option(fc.constantFrom(0.25, 0.5, 0.75, 1), { nil: undefined }), tasks: fc.integer({ min: 1, max: 30 }) });
    fc.assert(
      fc.property(fc.array(source, { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 8 }), (sources, batchSize) => {
        const datasets = sources.map((s, i) => ({ name: `s${i}`, weight: s.weight, ...(s.ratio !== undefined ? { throttleRatio: s.ratio } : {}) }));
        fc.pre(sourceCapIssues(batchSize, 1.5, datasets).length === 0); // a spec the run would refuse never runs
        const counts = Object.fromEntries(sources.map((s, i) => [`s${i}`, s.tasks]));
        let h: Harness;
        try {
          h = new Harness(specInput({ datasets, batchSize, numRepeat: 1, maxParallel: 64, epochs: 1 }), counts, false);
        } catch {
          return; // too few distinct tasks for a window (WindowCapacityError): refused at creation, never planned
        }
        h.start();
        for (let globalStep = 1; globalStep <= 6 && h.state.run.phase !== "finished"; globalStep++) {
          h.rolling(globalStep);
          h.serveAll(globalStep);
          h.engine("ENGINE.ROLLING_POST", globalStep);
          h.engine("ENGINE.WEIGHT_SYNCING", globalStep);
        }
        const steps = Object.values(h.state.steps);
        expect(steps.length).toBeGreaterThan(0);
        for (const st of steps) {
          expect(st.plannedGroups).toBeLessThanOrEqual(batchSize);
          for (const [i, s] of sources.entries()) {
            if (s.ratio !== undefined) expect(st.sourceGroups[`s${i}`] ?? 0).toBeLessThanOrEqual(throttleCap(batchSize, s.ratio));
          }
        }
      }),
      { numRuns: 60, seed: 24 },
    );
  });

  it("an allocation gives exactly its slots (while a source can take them) and never more than a source's cap", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ weight: fc.integer({ min: 0, max: 6 }), cap: fc.option(fc.integer({ min: 0, max: 8 }), { nil: null }) }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 12 }),
        (sources, slots) => {
          const weights = sources.map((s) => s.weight);
          const caps = sources.map((s) => s.cap);
          const a = allocateSlots(weights.map(() => 0), weights, slots, caps);
          const room = sources.reduce((n, s) => (s.weight > 0 ? n + (s.cap ?? Number.POSITIVE_INFINITY) : n), 0);
          expect(a.picks).toHaveLength(Math.min(slots, room));
          for (const [i, s] of sources.entries()) {
            expect(a.counts[i]).toBe(a.picks.filter((p) => p === i).length);
            if (s.cap !== null) expect(a.counts[i]).toBeLessThanOrEqual(s.cap);
            if (s.weight === 0) expect(a.counts[i]).toBe(0);
          }
        },
      ),
      { numRuns: 500, seed: 24 },
    );
  });
});

describe("a weighted mix converges to its ratios", () => {
  it("after any number of windows, each source's total is within one task of windows × slots × its weight share", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 30 }), (weights, slots, windows) => {
        const total = weights.reduce((a, b) => a + b, 0);
        let credits = weights.map(() => 0);
        const assigned = weights.map(() => 0);
        for (let w = 1; w <= windows; w++) {
          const a = allocateSlots(credits, weights, slots);
          credits = a.credits;
          expect(a.picks).toHaveLength(slots);
          a.counts.forEach((n, i) => (assigned[i]! += n));
          for (const [i, weight] of weights.entries()) expect(Math.abs(assigned[i]! - (w * slots * weight) / total)).toBeLessThan(1 + 1e-9);
        }
      }),
      { numRuns: 150, seed: 24 },
    );
  });

  it("with throttle caps the run accepts (each weight share fits under its cap), the mix still converges", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ weight: fc.integer({ min: 1, max: 9 }), ratio: fc.option(fc.constantFrom(0.2, 0.34, 0.5, 0.75, 1), { nil: undefined }) }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 16 }),
        (sources, slots) => {
          const mix = sources.map((s, i) => ({ name: `s${i}`, weight: s.weight, throttleRatio: s.ratio }));
          fc.pre(sourceCapIssues(slots, 1.5, mix).length === 0);
          const weights = sources.map((s) => s.weight);
          const caps = sources.map((s) => (s.ratio === undefined ? null : throttleCap(slots, s.ratio)));
          const total = weights.reduce((a, b) => a + b, 0);
          let credits = weights.map(() => 0);
          const assigned = weights.map(() => 0);
          for (let w = 1; w <= 40; w++) {
            const a = allocateSlots(credits, weights, slots, caps);
            credits = a.credits;
            a.counts.forEach((n, i) => (assigned[i]! += n));
          }
          for (const [i, weight] of weights.entries()) expect(Math.abs(assigned[i]! - (40 * slots * weight) / total)).toBeLessThan(1 + 1e-9);
        },
      ),
      { numRuns: 300, seed: 24 },
    );
  });
});
