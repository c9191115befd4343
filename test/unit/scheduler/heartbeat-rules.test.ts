/**
 * Heartbeat rules (scheduler/heartbeats) the heartbeat tests did not pin: a heartbeat for an episode the run does not
 * know is answered `unknown` (not stale: the consumer tells a lost row from a closed attempt), and a start reported
 * while the run drains drops the dispatch with the cause `stopped`. The run's first start report shortens only the
 * leases of dispatches still waiting for their start; a later start report shortens nothing.
 */
import { describe, expect, it } from "vitest";
import type { EpisodeDispatch } from "../../../src/scheduler/index.ts";
import { type Harness, rollingRun, specInput } from "./harness.ts";

const started = (h: Harness, d: EpisodeDispatch) => h.apply({ type: "episodeHeartbeat", episodeKey: d.episodeKey, attempt: d.attempt, dispatchId: d.dispatchId, stage: "started" });

describe("heartbeats for rows that cannot take them", () => {
  it("a heartbeat for an episode the run does not know is answered unknown and changes nothing", () => {
    const { h } = rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2 }));
    const before = h.state;
    for (const stage of ["started", "running"] as const) {
      expect(h.apply({ type: "episodeHeartbeat", episodeKey: "nope/0/0#0", attempt: 1, dispatchId: 1, stage }).ack.status).toBe("unknown");
    }
    expect(h.state).toBe(before);
  });

  it("a start reported while the run drains drops the dispatch as stopped, and the consumer is told not to claim", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2 }));
    const [a, b] = sent;
    h.claim(a!, 1); // keeps the run draining
    h.apply({ type: "stopRequested" });
    const ack = h.apply({ type: "episodeHeartbeat", episodeKey: b!.episodeKey, attempt: b!.attempt, dispatchId: b!.dispatchId, stage: "started" }).ack;
    expect(ack.status).toBe("stale");
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "dropped", lastCause: "stopped", deadlineAtMs: null });
  });
});

describe("the first start report shortens only what waits for its start", () => {
  it("an episode claimed before the run's first start report keeps its run lease", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2 }));
    const [a, b] = sent;
    h.claim(b!, 1); // claimed by a consumer that reports no start
    const runLease = h.row(b!.episodeKey)!.deadlineAtMs;
    h.nowMs += 3_000;
    started(h, a!);
    expect(h.row(b!.episodeKey)).toMatchObject({ status: "running", deadlineAtMs: runLease });
  });

  it("a later start report does not cut back the doubled un-started lease of a dispatch sent again", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 3, maxParallel: 3 }));
    const [a, b, c] = sent;
    started(h, a!); // the run's consumers report starts from now on: b and c get the 15 s un-started lease
    h.advance(15_000); // neither started: both sent again, with the doubled lease
    h.advance(5_000);
    const again = h.takeDispatches();
    const b2 = again.find((d) => d.episodeKey === b!.episodeKey)!;
    const c2 = again.find((d) => d.episodeKey === c!.episodeKey)!;
    expect([b2.dispatchId, c2.dispatchId]).toEqual([b!.dispatchId + 1, c!.dispatchId + 1]);
    const doubled = h.row(b!.episodeKey)!.deadlineAtMs!;
    expect(doubled - h.row(b!.episodeKey)!.dispatchedAtMs!).toBe(30_000);
    h.nowMs += 1_000;
    expect(started(h, c2).ack.status).toBe("applied");
    expect(h.row(b!.episodeKey)?.deadlineAtMs).toBe(doubled);
  });
});
