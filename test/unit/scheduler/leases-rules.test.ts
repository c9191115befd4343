/**
 * Lease rules (scheduler/leases) the BC-51 tests did not pin: a recorded end resolved from the outbox counts as one
 * reconciliation, and an eval score past its report lease is aborted on the server with the lease's cause (a score
 * carries no abort cause of its own).
 */
import { describe, expect, it } from "vitest";
import type { AbortEpisodes } from "../../../src/scheduler/index.ts";
import { Harness, rollingRun, specInput } from "./harness.ts";

const tuning = { dispatchLeaseSeconds: 60, runLeaseSeconds: 2000, reportLeaseSeconds: 700 };
const abortsOf = (h: Harness) => h.commands.filter((c): c is AbortEpisodes => c.type === "abortEpisodes").flatMap((c) => c.episodes);

describe("what a lease past its deadline counts and sends", () => {
  it("a recorded end resolved from the outbox counts one reconciliation per resolve asked", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 1, numRepeat: 2, maxParallel: 2, tuning }));
    const d = sent[0]!;
    h.claim(d, 1);
    h.outcome(d, { kind: "end", reward: 0.75 });
    expect(h.state.run.totals.reconciles).toBe(0);
    h.advance(700_000);
    expect(h.state.run.totals.reconciles).toBe(1);
    h.advance(700_000); // still no report: asked again, counted again
    expect(h.state.run.totals.reconciles).toBe(2);
  });

  it("an eval score past its report lease is aborted with the lease's cause: a score has no abort cause of its own", () => {
    const e = new Harness(specInput({ episodeType: "eval", batchSize: 1, numRepeat: 1, maxParallel: 1, tuning }), { gsm8k: 1 });
    e.start();
    e.rolling(1);
    const [x] = e.takeDispatches();
    e.claim(x!, 1, "uuid-s");
    e.outcome(x!, { kind: "score", reward: 1 });
    e.advance(700_000);
    expect(abortsOf(e)).toEqual([{ episodeKey: x!.episodeKey, attempt: 1, claims: [{ swarm: "default", episodeUuid: "uuid-s" }], reason: "lease_expired" }]);
  });
});
