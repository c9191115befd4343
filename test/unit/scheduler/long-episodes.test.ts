/**
 * Long episodes (issue 20 §2): a run with `discardEpisodeTimeoutSeconds` 3600 (the newest tutorials' value) is
 * accepted, and the lease relations it implies hold and are stated: the run lease covers the 8 × 3600 s lifetime,
 * the runtime stops an idle function 15 s before the server's idle deadline, and a run lease inside the lifetime is
 * refused with both numbers.
 */
import { describe, expect, it } from "vitest";
import { idleMarginMs } from "../../../src/runtime/episode-stop.ts";
import { parseRunSpec } from "../../../src/scheduler/index.ts";
import { specInput } from "./harness.ts";

describe("discardEpisodeTimeoutSeconds 3600", () => {
  it("is accepted with a run lease over the 8 h lifetime, and the heartbeat lease (not the lifetime) notices a dead episode", () => {
    const r = parseRunSpec(specInput({ discardEpisodeTimeoutSeconds: 3600 }));
    expect(r.success).toBe(true);
    if (!r.success) return;
    expect(r.data.discardEpisodeTimeoutSeconds).toBe(3600);
    expect(r.data.tuning.runLeaseSeconds).toBe(8 * 3600 + 60);
    expect(r.data.tuning.heartbeatLeaseSeconds).toBe(30); // a dead invocation is noticed in 30 s, however long the episode may live
    expect(idleMarginMs(3600)).toBe(15_000);
  });

  it("refuses a run lease inside the 8 × 3600 s lifetime, naming both values", () => {
    const r = parseRunSpec(specInput({ discardEpisodeTimeoutSeconds: 3600, tuning: { runLeaseSeconds: 20_000 } }));
    expect(r.success).toBe(false);
    if (r.success) return;
    expect(r.issues).toEqual([{ path: "tuning.runLeaseSeconds", message: expect.stringContaining("tuning.runLeaseSeconds 20000 must exceed 8 × discardEpisodeTimeoutSeconds 3600 = 28800 s") }]);
  });
});
