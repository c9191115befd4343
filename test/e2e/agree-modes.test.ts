/**
 * The agree-to-sync modes on the real stack (emulator in-process, the Worker in local workerd, the DO, the queue, the
 * countdown function): two runs share one server in `rollout_until_all_clients_agree_sync_weight`; each run's Durable
 * Object votes once its window is resolved, and the server syncs when both voted. Compared with the server's truth
 * (its status history and step log) and each run's ledger: every sync reached, no sync held past the others' votes
 * (a stall: a client on the active list that never agrees holds the batch until it ages out, 600 s), every reward
 * trained, none sent twice, nothing left claimed.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { waitForRun, type RunView } from "../../src/cli/dev/runs-api.ts";
import { SCENARIOS } from "../chaos/scenarios.ts";
import { chaosSuite } from "../chaos/suite.ts";
import { episodeBuffer, startRig, trainedBatches, type E2eRig } from "./_support.ts";

const ALL = "rollout_until_all_clients_agree_sync_weight";

async function finish(rig: E2eRig, runId: string): Promise<RunView> {
  const { outcome, status } = await waitForRun(rig.api, runId, { timeoutMs: 240_000 });
  if (outcome !== "finished" || !status) throw new Error(`run ${runId} did not finish: ${JSON.stringify(status?.log.slice(-8))}`);
  return status;
}

/** How long the engine collected each batch (ROLLING → ROLLING_POST), by global step, ms. */
function collectingMs(rig: E2eRig): Map<number, number> {
  const out = new Map<number, number>();
  let since: { step: number | null; atMs: number } | null = null;
  for (const c of rig.emulator.emulator.engine.statusHistory) {
    if (c.to === "ENGINE.ROLLING") since = { step: c.globalStep, atMs: c.atMs };
    if (c.to === "ENGINE.ROLLING_POST" && since?.step != null) out.set(since.step, c.atMs - since.atMs);
  }
  return out;
}

/** A webhook receiver on 127.0.0.1: every POST body it got. */
async function webhook(): Promise<{ server: Server; url: string; posts: Array<{ runId: string; step: number; metrics: Record<string, unknown> }> }> {
  const posts: Array<{ runId: string; step: number; metrics: Record<string, unknown> }> = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      posts.push(JSON.parse(body));
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, posts };
}

describe("e2e: two runs in the all-agree mode", () => {
  let rig: E2eRig | undefined;
  let hook: Awaited<ReturnType<typeof webhook>> | undefined;
  afterAll(async () => {
    await rig?.session.close();
    hook?.server.close();
  });

  it("reach 5 syncs with 0 stalls: each run votes once its share is done, every reward is trained once, nothing is left claimed", async () => {
    rig = await startRig(["--batch-size", "2", "--num-repeat", "2", "--steps", "5"]);
    const spec = { ...rig.session.spec, job: { ...(rig.session.spec.job ?? {}), swarmModeSampleCollectionMethod: ALL } };
    hook = await webhook();
    const [a, b] = await Promise.all([rig.api.create({ ...spec, weightSyncWebhook: hook.url }), rig.api.create(spec)]);
    const [sa, sb] = await Promise.all([finish(rig, a.runId), finish(rig, b.runId)]);

    const emulator = rig.emulator.emulator;
    expect(emulator.engine.trainConfig?.sampleCollectionMethod).toBe(ALL);
    const syncs = emulator.engine.statusHistory.filter((c) => c.to === "ENGINE.WEIGHT_SYNCING" && c.globalStep !== null).length;
    expect(syncs).toBeGreaterThanOrEqual(5);
    // no stall: no batch waited for a client that never agreed (it would wait 600 s for it to age out)
    const waits = [...collectingMs(rig).values()];
    expect(waits.length).toBeGreaterThanOrEqual(5);
    expect(waits.filter((ms) => ms > 60_000), `batches held past the votes: ${waits.join(", ")} ms`).toEqual([]);

    const trained = trainedBatches(rig.emulator);
    const keyOf = new Map(emulator.stepLog.flatMap((e) => e.episodes.map((x) => [x.episodeUuid, `${e.run}:${e.globalStep}`] as const)));
    for (const [view, runId] of [[sa, a.runId], [sb, b.runId]] as const) {
      const report = await rig.api.report(runId);
      expect(report.summary).toMatchObject({ verdict: "trained", untrainedRewards: 0, stopReason: "maxSteps" });
      const ledger = await rig.api.endedEpisodes(runId);
      expect(ledger.length).toBeGreaterThanOrEqual(5 * 2 * 2);
      expect(ledger.filter((e) => !trained.has(keyOf.get(e.episodeUuid) ?? "?")), `run ${runId}: rewards never trained`).toEqual([]);
      expect(view.totals.episodesEnded).toBe(ledger.length);
      expect(view.log.some((l) => /voted for the weight sync/.test(l.message))).toBe(true);
    }
    expect([...rig.endRequests.values()].every((n) => n === 1)).toBe(true);
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
    // the weight-sync webhook of run a: once per server step it took part in, never twice
    const steps = hook.posts.map((p) => p.step);
    expect(new Set(steps).size, `webhook steps ${steps.join(",")}`).toBe(steps.length);
    expect(steps.length).toBeGreaterThanOrEqual(5);
    expect(hook.posts.every((p) => p.runId === a.runId)).toBe(true);
    expect(hook.posts.reduce((n, p) => n + Number(p.metrics["episodes"]), 0)).toBeGreaterThanOrEqual(sa.totals.episodesEnded);
  });
});

describe("chaos row: agree mode with a run stopped mid-batch", () => {
  const { stack, rows } = chaosSuite();
  it("the stopped run votes before it leaves, the other run reaches every sync: 0 lost, 0 doubled, 0 left claimed, 0 stranded", async () => {
    const scenario = SCENARIOS.find((s) => s.name === "agree mode with a run stopped mid-batch")!;
    const row = await stack.run(scenario);
    rows.push(row);
    expect(row.notes.join("; ")).toMatch(/stopped after 3 ends/);
    expect(row.episodes).toBeGreaterThan(0);
    expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }).toEqual({ lost: 0, doubled: 0, leftClaimed: 0, stranded: 0 });
    expect(row.verdict).toBe("finished/stopRequested ok | finished/maxSteps ok");
  }, 300_000);
});
