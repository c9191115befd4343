/**
 * Heartbeat rules (scheduler/heartbeats) the heartbeat tests did not pin: a heartbeat for an episode the run does not
 * know is answered `unknown` (not stale: the consumer tells a lost row from a closed attempt), and a start reported
 * while the run drains drops the dispatch with the cause `stopped`.
 */
import { describe, expect, it } from "vitest";
import { rollingRun, specInput } from "./harness.ts";

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
