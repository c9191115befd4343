/**
 * A group with ended repeats is completed rather than dropped: its failing repeat gets more tries (the server
 * already holds the ended ones, which count only as a whole group), while a group with nothing ended is dropped
 * after `maxAttempts` as before (BC-32).
 */
import { describe, expect, it } from "vitest";
import { STARTED_GROUP_ATTEMPT_FACTOR } from "../../../src/scheduler/episode-lifecycle.ts";
import { rollingRun, specInput } from "./harness.ts";

function failOnce(h: ReturnType<typeof rollingRun>["h"], ref: { episodeKey: string; attempt: number; dispatchId: number }) {
  h.claim(ref);
  h.outcome(ref, { kind: "abort", cause: "infra_error" });
  h.report(ref, "aborted");
}

/** The next dispatch of `episodeKey` (a failed repeat is queued again; a tick dispatches it). */
function nextDispatch(h: ReturnType<typeof rollingRun>["h"], episodeKey: string) {
  h.advance(1_000);
  return h.takeDispatches().find((d) => d.episodeKey === episodeKey);
}

describe("groups with ended repeats", () => {
  it(`a repeat of a group with an ended repeat is tried up to ${STARTED_GROUP_ATTEMPT_FACTOR} × maxAttempts, and the group completes`, () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 2, maxAttempts: 2 }));
    const [first, second] = sent.filter((d) => d.groupKey === sent[0]!.groupKey);
    h.finishEpisode(first!, 1);
    let ref = second!;
    for (let i = 0; i < 4; i++) {
      failOnce(h, ref);
      const next = nextDispatch(h, ref.episodeKey);
      expect(next?.attempt, `retry ${i + 1}`).toBe(ref.attempt + 1);
      ref = next!;
    }
    expect(ref.attempt).toBe(5); // past maxAttempts 2: the group already has an ended repeat
    h.finishEpisode(ref, 0);
    expect(h.state.run.totals).toMatchObject({ groupsCompleted: 1, groupsDropped: 0, episodesEnded: 2 });
  });

  it("a group with nothing ended is still dropped after maxAttempts", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 2, maxAttempts: 2 }));
    let ref = sent[0]!;
    failOnce(h, ref);
    ref = nextDispatch(h, ref.episodeKey)!;
    failOnce(h, ref);
    expect(nextDispatch(h, ref.episodeKey)?.attempt ?? null).toBeNull(); // not tried a third time
    expect(h.state.episodes.get(ref.episodeKey)).toMatchObject({ status: "failed", attempt: 2 });
  });
});
