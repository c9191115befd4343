/**
 * Episodes past the queue consumer's wall on the real stack (issue 20 §2, docs/design/long-episodes.md): the emulator
 * in its own process (every LLM call held 3 or 7 s), both Workers in local workerd with a 20 s consumer wall (40 s for
 * the long-call row) and 40 s EpisodeHost legs (tuning values: local workerd enforces neither). Each row runs one task × 2 repeats and compares
 * the server's journal with the run's ledger (the chaos harness):
 *  - a 93 s episode (31 calls) crosses the consumer's wall and several host legs with one claim and one end per
 *    repeat, and the server saw exactly the function's 31 calls per attempt (none sent twice by a replay);
 *  - streamed 7 s calls held open by keepalives: a call open at a gate is finished by the holder that sent it and
 *    never sent again (exactly 7 per attempt);
 *  - workerd SIGKILLed as the consumer hands over: nothing lost, doubled, left claimed or stranded; each ended
 *    attempt still made exactly the function's 11 calls, the run finishes.
 * The transcript of each ended attempt names the holder that finished it (a host leg, never the consumer).
 */
import { describe, expect, it } from "vitest";
import type { JournalEvent } from "../../src/emulator/index.ts";
import { DIRTY_NOTE, type Scenario, type ScenarioContext } from "../chaos/harness.ts";
import { handoverFacts, SCENARIOS } from "../chaos/scenarios.ts";
import { chaosSuite } from "../chaos/suite.ts";

const { stack, rows } = chaosSuite();

/** The row, the server's journal, and the holders named by the ended attempts' transcripts. */
async function runRow(name: string) {
  const base = SCENARIOS.find((s) => s.name === name)!;
  let ctx: ScenarioContext | null = null;
  let events: readonly JournalEvent[] = [];
  let client: string | null = null;
  const holders: number[] = [];
  const scenario: Scenario = {
    ...base,
    async during(c) {
      ctx = c;
      await base.during?.(c);
    },
    after(e, uuid, note, view) {
      events = e;
      client = uuid;
      base.after?.(e, uuid, note, view);
    },
  };
  const row = await stack.run(scenario);
  rows.push(row);
  const c = ctx as ScenarioContext | null;
  if (c) {
    for (const ended of await c.api.endedEpisodes(c.runId)) {
      const res = await fetch(`${c.worker.url}/runs/${encodeURIComponent(c.runId)}/episodes/${encodeURIComponent(ended.episodeKey)}`, { headers: { authorization: `Bearer ${c.worker.token}` } });
      const transcript = (await res.json()) as { logs?: Array<{ msg: string }> };
      const line = transcript.logs?.find((l) => l.msg.startsWith("handed over: holder "));
      holders.push(line ? Number(/holder (\d+)/.exec(line.msg)?.[1]) : 1);
    }
  }
  return { row, facts: handoverFacts(events, client), holders };
}

function expectClean(row: Awaited<ReturnType<typeof runRow>>["row"]) {
  expect(row.notes.filter((n) => DIRTY_NOTE.test(n)), row.notes.join("; ")).toEqual([]);
  expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }).toEqual({ lost: 0, doubled: 0, leftClaimed: 0, stranded: 0 });
  expect(row.verdict, row.notes.join("; ")).toBe("finished/maxSteps ok");
}

describe("e2e: episodes past the consumer's wall (EpisodeHost handover)", () => {
  it("a 90 s episode crosses a 20 s consumer wall and 40 s host legs: one claim and one end per repeat, the function's 31 calls each, none twice", async () => {
    const { row, facts, holders } = await runRow("long episode across the wall");
    expectClean(row);
    expect({ claims: facts.claims, ends: facts.ends, aborts: facts.aborts, calls: facts.callsPerEnded }).toEqual({ claims: 2, ends: 2, aborts: 0, calls: [31, 31] });
    expect(facts.longestSeconds).toBeGreaterThanOrEqual(90);
    expect(row.rerun).toBe(0);
    // the consumer handed over at its gate and the host legs handed on: the 90 s needs more than two holders of 20 and 40 s
    expect(holders).toHaveLength(2);
    for (const h of holders) expect(h).toBeGreaterThanOrEqual(3);
  }, 300_000);

  it("long call: streamed 7 s calls held open by keepalives; one open at a gate is finished by the holder that sent it and never sent again", async () => {
    const { row, facts, holders } = await runRow("long call");
    expectClean(row);
    expect({ claims: facts.claims, ends: facts.ends, aborts: facts.aborts, calls: facts.callsPerEnded }).toEqual({ claims: 2, ends: 2, aborts: 0, calls: [7, 7] });
    expect(facts.longestSeconds).toBeGreaterThanOrEqual(46);
    for (const h of holders) expect(h).toBeGreaterThanOrEqual(2);
  }, 240_000);

  it("handover kill: workerd SIGKILLed as the consumer hands over loses nothing, ends nothing twice, leaves nothing claimed; the run finishes", async () => {
    const { row, facts } = await runRow("handover kill");
    expectClean(row);
    expect(row.notes.some((n) => n.startsWith("workerd SIGKILLed as an LLM call ended 9 s or more after its claim")), row.notes.join("; ")).toBe(true);
    // each repeat ended once; an attempt the kill cut was aborted once and ran again
    expect(facts.ends).toBe(2);
    expect(facts.claims).toBeGreaterThanOrEqual(2);
    expect(facts.claims).toBeLessThanOrEqual(2 + facts.aborts + row.rerun);
    expect(facts.callsPerEnded).toEqual([11, 11]);
  }, 300_000);
});
