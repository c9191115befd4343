/** Which of the server's running episodes are this run's claims that nobody holds (edge/run/claim-sweep, pure). */
import { describe, expect, it } from "vitest";
import { orphanClaims, serverSeconds } from "../../../src/edge/run/claim-sweep.ts";

const detail = (client: string, idle: number, discard = 60) => ({
  episode_status: "claimed",
  client_uuid: client,
  time_since_last_activity: `${idle.toFixed(1)}s`,
  discard_episode_timeout: `${discard.toFixed(1)}s`,
  llm_call_count: "0",
  optional_task_id: "",
});

describe("orphanClaims", () => {
  const rule = { clientUuid: "me", known: new Set(["held"]), graceSeconds: 10, janitorMarginSeconds: 5 };

  it("names only the run's own unknown claims idle past the grace and not near the janitor's revert", () => {
    const running = {
      orphan: detail("me", 12),
      held: detail("me", 30), // a live attempt holds it
      fresh: detail("me", 3), // may be a consumer's unreported claim
      other: detail("someone", 30), // another client's
      nearRevert: detail("me", 57), // the janitor reverts it in < 5 s: left to it
    };
    expect(orphanClaims(running, rule)).toEqual([{ episodeUuid: "orphan", idleSeconds: 12 }]);
  });

  it("no running details (null) or unreadable idle times name nothing", () => {
    expect(orphanClaims(null, rule)).toEqual([]);
    expect(orphanClaims({ x: { client_uuid: "me", time_since_last_activity: "soon" } }, rule)).toEqual([]);
  });

  it("reads the server's second strings", () => {
    expect(serverSeconds("12.3s")).toBe(12.3);
    expect(serverSeconds("240.0s")).toBe(240);
    expect(serverSeconds("7")).toBe(7);
    expect(Number.isNaN(serverSeconds("n/a"))).toBe(true);
  });
});
