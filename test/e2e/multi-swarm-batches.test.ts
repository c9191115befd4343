/**
 * Batch truth on both servers of a two-model run, on the real stack (two emulators in-process, the Worker in local
 * workerd, `academic-translation`: one claim on each server per episode): another client stops and restarts the
 * second server's engine mid-batch. The run sees that server's batch wiped, runs those episodes again (each wiped
 * repeat as a new attempt while its group is live, or its resolved group opened again: which one depends on when the
 * run sees the wipe, so the test asks only that each ran again), and its
 * verdict matches what each server trained: nothing lost, every reward the run counts as trained sits in a batch
 * its server trained, and `untrainedRewards` is exactly what the servers did not train.
 */
import { afterAll, describe, expect, it } from "vitest";
import { parseDevArgs } from "../../src/cli/dev/options.ts";
import { buildDevPlan } from "../../src/cli/dev/plan.ts";
import { runsApi, waitForRun } from "../../src/cli/dev/runs-api.ts";
import { startDevSession, type DevSession } from "../../src/cli/dev/session.ts";
import { episodeBuffer, fetchWithTimeout, trainedBatches } from "./_support.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


describe("e2e: batch truth on both servers of a two-model run", () => {
  let session: DevSession | undefined;
  afterAll(async () => {
    await session?.close();
  });

  it("a restart of the second server's engine mid-batch: its wiped episodes run again and the run's verdict matches what each server trained", async () => {
    const options = parseDevArgs(["--function", "academic-translation", "--steps", "2", "--batch-size", "2", "--num-repeat", "2"]);
    session = await startDevSession(await buildDevPlan(options!));
    const api = runsApi(session.worker.url, fetchWithTimeout, { token: session.worker.token });
    const [first, second] = session.swarms;
    if (!first?.emulator || !second?.emulator) throw new Error("expected two local emulators");
    const created = await api.create(session.spec);

    // once the second server's first batch holds rewards of the run, another client stops and restarts its engine
    const end = Date.now() + 60_000;
    while ((second.emulator.emulator.stepLog.find((e) => e.run === 1 && e.globalStep === 1)?.episodes.length ?? 0) < 2) {
      if (Date.now() > end) throw new Error("the second server's first batch never held 2 rewards");
      await sleep(20);
    }
    const other = (path: string) => fetch(`${second.emulator!.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect((await other("/stop_engine")).status).toBe(200);
    expect((await other("/start_engine")).status).toBe(200);

    const { outcome, status } = await waitForRun(api, created.runId, { timeoutMs: 120_000 });
    expect(outcome).toBe("finished");
    const report = await api.report(created.runId);
    const summary = report.summary as typeof report.summary & { verdict: string; untrainedRewards: number; totals: { episodesWiped: number; groupsRerun: number } };
    const ledger = await api.endedEpisodes(created.runId);

    let untrainedOnServers = 0;
    for (const swarm of [first, second]) {
      const emulator = swarm.emulator!;
      const trained = trainedBatches(emulator);
      const accepted = emulator.emulator.stepLog.flatMap((e) => e.episodes.filter((x) => !x.dropped).map((x) => ({ uuid: x.episodeUuid, key: `${e.run}:${e.globalStep}`, run: e.run })));
      const lastRun = Math.max(...accepted.map((a) => a.run));
      // every accepted reward of this server is in the run's ledger, once (nothing lost, nothing uncounted)
      expect(ledger.filter((l) => l.swarm === swarm.name).map((l) => l.episodeUuid).sort()).toEqual(accepted.map((a) => a.uuid).sort());
      untrainedOnServers += accepted.filter((a) => a.run === lastRun && !trained.has(a.key)).length;
      expect((await episodeBuffer(emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
    }
    // the second server's restart took accepted rewards with it, and the run ran them again
    const wipedOnSecond = second.emulator.emulator.stepLog.filter((e) => e.run === 1).flatMap((e) => e.episodes.filter((x) => !x.dropped));
    expect(wipedOnSecond.length).toBeGreaterThanOrEqual(2);
    expect(summary.totals.episodesWiped).toBeGreaterThanOrEqual(1);
    // each wiped reward's repeat ran again on that server after the restart: as a new attempt of its live group
    // (a repeat of it still running when the run saw the wipe), or in its group opened again under `…~N`
    // (`groupsRerun`, the group was resolved by then) — which of the two depends on timing only
    const acceptedAfter = new Set(second.emulator.emulator.stepLog.filter((e) => e.run > 1).flatMap((e) => e.episodes.filter((x) => !x.dropped).map((x) => x.episodeUuid)));
    const onSecond = ledger.filter((l) => l.swarm === second.name);
    const repeatOf = (key: string) => key.replace(/~\d+(?=#)/, "");
    for (const wiped of wipedOnSecond) {
      const row = onSecond.find((l) => l.episodeUuid === wiped.episodeUuid)!;
      const again = onSecond.filter((l) => repeatOf(l.episodeKey) === repeatOf(row.episodeKey) && acceptedAfter.has(l.episodeUuid));
      expect(again.length, `the wiped repeat ${row.episodeKey} ran again after the restart`).toBeGreaterThanOrEqual(1);
    }
    const rerunAttempts = onSecond.filter((l) => l.attempt > 1 && acceptedAfter.has(l.episodeUuid)).length;
    expect(summary.totals.groupsRerun + rerunAttempts).toBeGreaterThanOrEqual(1);
    // the run's verdict is the servers' truth: what it reports untrained is exactly what they did not train
    expect(summary.untrainedRewards).toBe(untrainedOnServers);
    expect(summary.verdict).toBe(untrainedOnServers === 0 ? "trained" : "untrained");
    expect(status!.episodes.inFlight).toBe(0);
  }, 180_000);
});
