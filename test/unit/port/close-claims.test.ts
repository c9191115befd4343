/**
 * The port's rule for ending an episode's claims (port/close-claims): how the server's answers on several swarms
 * add up to one reported result, with fake closers so every order of answers is checked exactly.
 */
import { describe, expect, it } from "vitest";
import { assertValidWorkflowOutput } from "../../../src/protocol/index.ts";
import { endAll, type ClaimCloser, type ClaimHandle, type EndAnswer } from "../../../src/port/index.ts";

const OUTPUT = assertValidWorkflowOutput({ reward: 1 });
const EXPIRED: EndAnswer = { kind: "expired", reason: "notClaimed" };
const LOST: EndAnswer = { kind: "lost", reason: "weightSyncing" };
const ENDED: EndAnswer = { kind: "ended" };

/** A closer that answers every end with `answer` and records the ends it was sent. */
function closer(answer: EndAnswer): ClaimCloser & { ends: string[] } {
  const ends: string[] = [];
  return {
    ends,
    endEpisode: async (_taskId, episodeUuid) => {
      ends.push(episodeUuid);
      return answer;
    },
    abortEpisode: async () => true,
  };
}

function claims(...answers: EndAnswer[]): Array<ClaimHandle & { client: ReturnType<typeof closer> }> {
  return answers.map((a, i) => ({ swarm: `s${i}`, episodeUuid: `u${i}`, client: closer(a) }));
}
const outputsFor = (cs: readonly ClaimHandle[]) => Object.fromEntries(cs.map((c) => [c.swarm, OUTPUT]));

describe("endAll across swarms", () => {
  for (const [label, answers] of [
    ["lost on the first swarm, expired on the second", [LOST, EXPIRED]],
    ["expired on the first swarm, lost on the second", [EXPIRED, LOST]],
    ["ended, lost, expired", [ENDED, LOST, EXPIRED]],
  ] as const) {
    it(`expired wins over lost (${label}): reported expired with the expiry's reason, every claim sent its end once`, async () => {
      const cs = claims(...answers);
      const accepted = (answers as readonly EndAnswer[]).includes(ENDED) ? { endedSwarms: ["s0"] } : {};
      expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "expired", cause: "expired:notClaimed", ...accepted });
      for (const c of cs) expect(c.client.ends).toEqual([c.episodeUuid]);
    });
  }

  it("lost and ended: reported lost with the loss's reason, naming the swarm whose server accepted its reward", async () => {
    const cs = claims(ENDED, LOST);
    expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "lost", cause: "lost:weightSyncing", endedSwarms: ["s0"] });
  });

  it("ended everywhere: reported ended, no cause", async () => {
    const cs = claims(ENDED, ENDED);
    expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "ended", cause: undefined });
  });
});
