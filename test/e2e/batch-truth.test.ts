/**
 * Batch truth on the real stack (emulator in-process, the Worker in local workerd, the DO, the queue, the countdown
 * function): the run's verdict is compared with the server's truth — the emulator's step log (every accepted train
 * episode, per engine run and global step) and its status history — and with the run's own ledger.
 *  - another client stops and restarts the engine mid-batch: the wiped groups run again, nothing is stranded, every
 *    reward the run counts as trained sits in a batch the engine trained;
 *  - two runs interleaved on one dataset and one server: run-scoped task ids keep their groups apart.
 */
import { afterAll, describe, expect, it } from "vitest";
import { waitForRun, type RunView } from "../../src/cli/dev/runs-api.ts";
import type { StepLogEntry } from "../../src/emulator/index.ts";
import { episodeBuffer, startRig, trainedBatches, type E2eRig } from "./_support.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (bounded) until `check` is true, polling every 20 ms. @throws naming `what` when it never is */
async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}


/** Our accepted episodes on the server: per step-log entry, those of this run's client. */
function serverEpisodes(entries: readonly StepLogEntry[], clientUuid: string): { key: string; uuid: string; taskId: string }[] {
  return entries.flatMap((e) => e.episodes.filter((x) => x.clientUuid === clientUuid && !x.dropped).map((x) => ({ key: `${e.run}:${e.globalStep}`, uuid: x.episodeUuid, taskId: x.taskId })));
}

async function finish(rig: E2eRig, runId: string): Promise<RunView> {
  const { outcome, status } = await waitForRun(rig.api, runId, { timeoutMs: 90_000 });
  if (outcome !== "finished" || !status) throw new Error(`run ${runId} did not finish: ${JSON.stringify(status?.log.slice(-8))}`);
  return status;
}

describe("e2e: batch truth under another client's restart and a shared dataset", () => {
  let rig: E2eRig | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("another client's restart mid-batch: the wiped groups run again, nothing is stranded, and the verdict matches the server's step log and the run's ledger", async () => {
    rig = await startRig(["--batch-size", "4", "--num-repeat", "2", "--steps", "2"]);
    const emulator = rig.emulator.emulator;
    const url = rig.emulator.url;
    const created = await rig.api.create(rig.session.spec);
    // once the first batch holds some of this run's rewards, another client stops and restarts the engine
    await until("rewards in the first batch", () => (emulator.stepLog.find((e) => e.run === 1 && e.globalStep === 1)?.episodes.length ?? 0) >= 2);
    const other = (path: string) => fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect((await other("/stop_engine")).status).toBe(200);
    expect((await other("/start_engine")).status).toBe(200);
    const status = await finish(rig, created.runId);
    const report = await rig.api.report(created.runId);
    const summary = report.summary as typeof report.summary & { verdict: string; untrainedRewards: number; totals: { episodesWiped: number; groupsRerun: number } };

    const clientUuids = new Set(emulator.stepLog.flatMap((e) => e.episodes.map((x) => x.clientUuid)));
    expect(clientUuids.size).toBe(1);
    const [clientUuid] = [...clientUuids];
    const ours = serverEpisodes(emulator.stepLog, clientUuid!);
    const trained = trainedBatches(rig.emulator);
    const wipedOnServer = ours.filter((e) => e.key.startsWith("1:"));
    const trainedOnServer = ours.filter((e) => trained.has(e.key));
    const untrainedOnServer = ours.filter((e) => !trained.has(e.key) && !e.key.startsWith("1:"));

    expect(wipedOnServer.length).toBeGreaterThanOrEqual(2); // the stop took accepted rewards with it
    expect(untrainedOnServer, "nothing stranded: every reward of the new engine run was trained").toEqual([]);
    expect(summary).toMatchObject({ verdict: "trained", untrainedRewards: 0, stopReason: "maxSteps" });
    // the run's verdict is the server's truth
    expect(summary.totals.episodesWiped).toBe(wipedOnServer.length);
    expect(summary.totals.groupsRerun).toBeGreaterThanOrEqual(1);
    expect(status.totals.episodesEnded).toBe(trainedOnServer.length);
    expect(status.batches).toMatchObject({ episodesUntrained: 0, episodesWiped: wipedOnServer.length, episodesTrained: trainedOnServer.length });
    // the ledger is every accepted end, once: the trained ones and the wiped ones
    const ledger = await rig.api.endedEpisodes(created.runId);
    expect(ledger.map((e) => e.episodeUuid).sort()).toEqual(ours.map((e) => e.uuid).sort());
    // the ledger says which were wiped and by what; one episode key has at most one live row
    const wipedRows = ledger.filter((e) => e.wipedBy);
    expect(wipedRows.map((e) => e.episodeUuid).sort()).toEqual(wipedOnServer.map((e) => e.uuid).sort());
    for (const e of wipedRows) expect(e.wipedBy).toMatch(/^batch \d+:\d+: the (engine stopped or restarted|pool information no longer lists)/);
    const live = ledger.filter((e) => !e.wipedBy).map((e) => `${e.episodeKey}/${e.swarm}`);
    expect(new Set(live).size).toBe(live.length);
    // /metrics counts the wiped rewards apart from the ended ones
    const all = (await rig.api.metrics(created.runId)).groups.filter((g) => g.window !== null && g.source === "*" && g.swarm === "*");
    expect(all.reduce((n, g) => n + g.wiped, 0)).toBe(wipedOnServer.length);
    expect(all.reduce((n, g) => n + g.ended, 0)).toBe(trainedOnServer.length);
    expect([...rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    // step rows name the new engine run's real steps
    expect(status.steps.map((s) => s.globalStep)).toEqual([1, 2]);
    expect(status.episodes.inFlight).toBe(0);
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
  });

  it("two runs interleaved on one dataset never merge groups: each server task id holds one run's episodes, and both runs' verdicts match the server", async () => {
    if (!rig) throw new Error("the first test starts the rig");
    const emulator = rig.emulator.emulator;
    const before = emulator.stepLog.length;
    const [a, b] = await Promise.all([rig.api.create(rig.session.spec), rig.api.create(rig.session.spec)]);
    const [sa, sb] = await Promise.all([finish(rig, a.runId), finish(rig, b.runId)]);
    const entries = emulator.stepLog.slice(Math.max(0, before - 1)); // the last entry of the first test may continue
    const clientsOf = new Map<string, Set<string>>();
    for (const e of entries) for (const x of e.episodes) {
      if (!x.taskId.includes("@")) continue;
      clientsOf.set(x.taskId, (clientsOf.get(x.taskId) ?? new Set()).add(x.clientUuid));
    }
    const runTag = (runId: string) => runId.slice(-8);
    const idsA = [...clientsOf.keys()].filter((id) => id.endsWith(`@${runTag(a.runId)}`));
    const idsB = [...clientsOf.keys()].filter((id) => id.endsWith(`@${runTag(b.runId)}`));
    expect(idsA.length).toBeGreaterThan(0);
    expect(idsB.length).toBeGreaterThan(0);
    // the same dataset rows, under two ids: one per run
    const rows = (ids: string[]) => new Set(ids.map((id) => id.slice(0, id.lastIndexOf("@"))));
    expect([...rows(idsA)].filter((r) => rows(idsB).has(r)).length).toBeGreaterThan(0);
    for (const [id, clients] of clientsOf) {
      if (!idsA.includes(id) && !idsB.includes(id)) continue;
      expect(clients.size, `task ${id} merged episodes of two runs`).toBe(1);
    }
    const trained = trainedBatches(rig.emulator);
    for (const [view, runId] of [[sa, a.runId], [sb, b.runId]] as const) {
      const report = await rig.api.report(runId);
      expect(report.summary).toMatchObject({ verdict: "trained", untrainedRewards: 0 });
      const ledger = await rig.api.endedEpisodes(runId);
      const keyOf = new Map(entries.flatMap((e) => e.episodes.map((x) => [x.episodeUuid, `${e.run}:${e.globalStep}`] as const)));
      const notTrained = ledger.filter((e) => !trained.has(keyOf.get(e.episodeUuid) ?? "?"));
      expect(notTrained, `run ${runId}: rewards in a batch the server never trained`).toEqual([]);
      expect(view.totals.episodesEnded).toBe(ledger.length);
    }
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
  });
});
