/**
 * Over-provisioning on the real stack (issue 23 §2): the emulator in its own process with its journal, the Worker in
 * local workerd, a heavy-tailed function (`chaos-tail`: about one episode in five pauses 30 s) and runs with
 * `overProvision` 1 (4 extra task groups on a batch of 4, throttleRatio 2). Checked against the server's journal:
 *  - every claim of the run that did not end was given back with `/abort_episode` while its engine was ROLLING or
 *    ROLLING_POST (never left to the janitor, never held into the weight sync);
 *  - no `/end_episode` of the run landed in a batch other than the one it was claimed in, nor after that batch trained;
 *  - no claimed record left; nothing lost, doubled or stranded (the chaos row);
 *  - every task is complete (≥ numRepeat ends) in at most one trained batch, and every trained batch closed on at
 *    least its batch size of complete tasks;
 *  - the run's counts equal the server's: accepted ends per step and in total, and it cut something.
 * Alone, and with a second run of the same spec interleaved on the server (another client of the same batches).
 */
import { describe, expect, it } from "vitest";
import type { JournalEvent } from "../../src/emulator/index.ts";
import type { Scenario } from "../chaos/harness.ts";
import { chaosSuite } from "../chaos/suite.ts";

const { stack, rows } = chaosSuite();

const NUM_REPEAT = 2;

/** A heavy-tailed run with extras: 3 steps of batch 4 × 2, 4 extra groups per window. */
function scenario(name: string, alsoRuns = 0): Scenario {
  return {
    name,
    argv: ["--function", "countdown", "--steps", "3", "--batch-size", "4", "--num-repeat", String(NUM_REPEAT), "--seed", "5"],
    function: "chaos-tail",
    spec: { overProvision: 1, throttleRatio: 2 },
    alsoRuns,
    keepFacts: true,
    timeoutMs: 110_000,
  };
}

type Claim = Extract<JournalEvent, { ev: "claim" }>;
type End = Extract<JournalEvent, { ev: "end" }>;

/** What the journal says of one client: its claims, ends and aborts, and the engine status at any instant. */
function journalOf(events: readonly JournalEvent[], clientUuid: string) {
  const claims = events.filter((e): e is Claim => e.ev === "claim" && e.clientUuid === clientUuid);
  const ends = events.filter((e): e is End => e.ev === "end" && e.clientUuid === clientUuid);
  const aborts = events.filter((e): e is Extract<JournalEvent, { ev: "abort" }> => e.ev === "abort" && e.clientUuid === clientUuid);
  const reverts = events.filter((e) => e.ev === "revert" && e.clientUuid === clientUuid);
  const statuses = events.filter((e): e is Extract<JournalEvent, { ev: "status" }> => e.ev === "status");
  /** the engine status in force at `atMs` (the last change at or before it) */
  const statusAt = (atMs: number) => statuses.filter((s) => s.atMs <= atMs).at(-1)?.to ?? "ENGINE.OFFLINE";
  /** when the batch of `globalStep` trained (its WEIGHT_SYNCING with that step), if it did */
  const trainedAt = (globalStep: number) => statuses.find((s) => s.to === "ENGINE.WEIGHT_SYNCING" && s.globalStep === globalStep)?.atMs;
  return { claims, ends, aborts, reverts, statusAt, trainedAt };
}

/** Task ids with ≥ numRepeat accepted ends, per global step, over every client (the server's complete tasks). */
function completeTasksByStep(events: readonly JournalEvent[]): Map<number, Set<string>> {
  const counts = new Map<string, number>();
  for (const e of events) if (e.ev === "end" && !e.dropped) counts.set(`${e.globalStep}\u0000${e.taskId}`, (counts.get(`${e.globalStep}\u0000${e.taskId}`) ?? 0) + 1);
  const out = new Map<number, Set<string>>();
  for (const [key, n] of counts) {
    if (n < NUM_REPEAT) continue;
    const [step, task] = key.split("\u0000");
    const set = out.get(Number(step)) ?? new Set<string>();
    set.add(task!);
    out.set(Number(step), set);
  }
  return out;
}

async function runAndCheck(s: Scenario): Promise<void> {
  const row = await stack.run(s);
  rows.push(row);
  const runs = 1 + (s.alsoRuns ?? 0);
  expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }, row.notes.join("; ")).toEqual({ lost: 0, doubled: 0, leftClaimed: 0, stranded: 0 });
  expect(row.verdict, row.notes.join("; ")).toBe(Array(runs).fill("finished/maxSteps ok").join(" | "));
  const facts = row.facts!;
  expect(facts.runs).toHaveLength(runs);
  let cutTotal = 0;
  const extrasPerStep: number[] = [];
  for (const run of facts.runs) {
    expect(run.clientUuid, `run ${run.runId} reached the journal`).toBeTruthy();
    const j = journalOf(facts.events, run.clientUuid!);
    const ended = new Set(j.ends.map((e) => e.episodeUuid));
    const aborted = new Set(j.aborts.map((e) => e.episodeUuid));
    const stepOfClaim = new Map(j.claims.map((c) => [c.episodeUuid, c.globalStep]));
    // every claim that did not end was given back with /abort_episode while the engine was ROLLING or ROLLING_POST
    const notEnded = j.claims.filter((c) => !ended.has(c.episodeUuid));
    for (const c of notEnded) expect(aborted.has(c.episodeUuid), `claim ${c.episodeUuid} neither ended nor aborted`).toBe(true);
    for (const a of j.aborts) expect(["ENGINE.ROLLING", "ENGINE.ROLLING_POST"], `abort of ${a.episodeUuid}`).toContain(j.statusAt(a.atMs));
    expect(j.reverts, "no claim was left to the idle janitor").toEqual([]);
    // no end lands outside the batch it was claimed in, nor after that batch trained
    for (const e of j.ends) {
      expect(e.globalStep, `end of ${e.episodeUuid}`).toBe(stepOfClaim.get(e.episodeUuid));
      const trainedAt = j.trainedAt(e.globalStep);
      if (trainedAt !== undefined) expect(e.atMs, `end of ${e.episodeUuid} after its batch trained`).toBeLessThanOrEqual(trainedAt);
    }
    // the run's counts are the server's: per step and in total
    const view = run.view!;
    expect(view.totals.episodesEnded).toBe(j.ends.filter((e) => !e.dropped).length);
    const serverPerStep = new Map<number, number>();
    for (const e of j.ends) if (!e.dropped) serverPerStep.set(e.globalStep, (serverPerStep.get(e.globalStep) ?? 0) + 1);
    // a step only one window landed in, and that window only there: its count is the server's for that step
    const windowsAt = new Map<number, number>();
    for (const st of view.steps) for (const g of st.globalSteps) windowsAt.set(g, (windowsAt.get(g) ?? 0) + 1);
    for (const st of view.steps) {
      const g = st.globalSteps[0]!;
      if (st.globalSteps.length === 1 && windowsAt.get(g) === 1) expect(st.episodesEnded, `window ${st.windowIndex} at step ${g}`).toBe(serverPerStep.get(g) ?? 0);
    }
    expect(view.steps.reduce((n, st) => n + st.episodesEnded, 0)).toBe([...serverPerStep.values()].reduce((a, b) => a + b, 0));
    cutTotal += view.totals.groupsCut;
    extrasPerStep.push(...view.steps.map((st) => st.extraGroups));
  }
  // alone, every window takes extras; beside another client, the extras are bounded by the slots the other holds at
  // the last pool read (none when it holds them all), so only some windows do
  if (runs === 1) expect(extrasPerStep.every((n) => n > 0), `extra groups per window: ${extrasPerStep}`).toBe(true);
  else expect(extrasPerStep.some((n) => n > 0), `extra groups per window: ${extrasPerStep}`).toBe(true);
  // every task is complete in at most one trained batch (no task trained twice)
  const complete = completeTasksByStep(facts.events);
  const seen = new Map<string, number>();
  for (const tasks of complete.values()) for (const t of tasks) seen.set(t, (seen.get(t) ?? 0) + 1);
  expect([...seen].filter(([, n]) => n > 1), "tasks complete in two batches").toEqual([]);
  // each trained batch closed on at least its batch size of complete tasks
  for (const [step, tasks] of complete) expect(tasks.size, `complete tasks of step ${step}`).toBeGreaterThanOrEqual(4);
  // the tail was real: something was cut, and given back
  expect(cutTotal, row.notes.join("; ")).toBeGreaterThan(0);
}

describe("e2e: over-provisioning cuts the tail (issue 23 §2)", () => {
  it("alone: extra claims end or are aborted while ROLLING/ROLLING_POST, nothing ends late, every task trained once, the run's counts are the server's", async () => {
    await runAndCheck(scenario("over-provision: alone"));
  }, 150_000);

  it("with another client on the server (a second run interleaved): the same holds for both", async () => {
    await runAndCheck(scenario("over-provision: two runs", 1));
  }, 150_000);
});
