/**
 * @module test/chaos/scenarios — one scenario per fault kind (issue: the chaos suite). `FAST` is the subset that
 * also runs in `npm test` (test/e2e/chaos-fast.test.ts).
 */
import { SwarmClient } from "../../src/client/index.ts";
import type { JournalEvent } from "../../src/emulator/index.ts";
import { bootEngine, type Scenario, type ScenarioContext } from "./harness.ts";

const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

/** Another client (its own uuid) that claims, chats and ends episodes until `count` are ended or `untilMs`. */
async function otherTrainer(url: string, count: number, untilMs: number): Promise<number> {
  const client = new SwarmClient({ baseURL: url, clientUuid: `other-trainer-${Date.now()}`, logger: SILENT });
  let ended = 0;
  while (ended < count && Date.now() < untilMs) {
    const c = await client.claimEpisode({ episodeType: "train", discardEpisodeTimeoutSeconds: 60 }).catch(() => null);
    if (c?.kind !== "claimed") {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    await fetch(`${c.baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${c.apiKey}` }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) }).then((r) => r.text()).catch(() => "");
    const r = await client.endEpisode("other:task", c.episodeUuid, { reward: 0 }).catch(() => null);
    if (r?.kind === "ended") ended++;
  }
  return ended;
}

/** Runs sharing one server, small: 2 steps of 4 tasks × 2 repeats each (16 rewards planned per run). */
const SMALL_ARGV = ["--function", "countdown", "--steps", "2", "--batch-size", "4", "--num-repeat", "2", "--seed", "13"];

/** Runs sharing one server: 3 steps of 8 tasks × 4 repeats each (96 rewards planned per run). */
const SHARED_ARGV = ["--function", "countdown", "--steps", "3", "--batch-size", "8", "--num-repeat", "4", "--seed", "11"];

/**
 * Waits until the run ended `ends` episodes and has episodes running (none reporting, when `quiet`), then `ms` more:
 * the sandbox functions are then inside their command. @returns how many were running
 */
async function midCommand(ctx: ScenarioContext, ends: number, ms: number, quiet = false): Promise<number> {
  await ctx.untilEnded(ends);
  await ctx.until((v) => Number(v.episodes["running"]) > 0 && (!quiet || Number(v.episodes["reporting"]) === 0), 30_000);
  await new Promise((r) => setTimeout(r, ms));
  return ctx.api.get(ctx.runId).then((v) => Number(v.episodes["running"]), () => 0);
}

/**
 * The handover rows' Workers (docs/design/long-episodes.md): a 20 s queue consumer wall (its gate at 10 s, a call
 * open then must end by 14 s) and 40 s host legs (gate at 20 s, open calls end by 29 s); local workerd enforces
 * neither, so they are tuning values. Every LLM call lasts 3 s, a second less than the shorter window, so a call
 * open at a gate ends in time (its own overhead included), however late the claim came.
 */
export const HANDOVER_VARS = { AJET_CONSUMER_WALL_SECONDS: "20", AJET_HOST_WALL_SECONDS: "40" };

/** The long-call row's Workers: 40 s walls for the consumer and the host legs (gate at 20 s, open calls end by 29 s: 9 s for a 7 s call). */
export const LONG_CALL_VARS = { AJET_CONSUMER_WALL_SECONDS: "40", AJET_HOST_WALL_SECONDS: "40" };

/** One task, two repeats, one step: two long episodes side by side. */
const HANDOVER_ARGV = ["--function", "countdown", "--steps", "1", "--batch-size", "1", "--num-repeat", "2", "--seed", "21"];

/**
 * What the server's journal shows of a handover row's run, per claim (an aborted episode goes back to the server's
 * pool and may be claimed again under the same uuid: each claim is one attempt): claims, ends, aborts, the LLM calls
 * of each attempt that ended (made between its claim and its end), the longest claim → end in seconds.
 */
export function handoverFacts(events: readonly JournalEvent[], client: string | null) {
  const open = new Map<string, { atMs: number; calls: number }>();
  const callsPerEnded: number[] = [];
  let claims = 0;
  let ends = 0;
  let aborts = 0;
  let longestSeconds = 0;
  for (const e of events) {
    if (!("clientUuid" in e) || e.clientUuid !== client) continue;
    if (e.ev === "claim") {
      claims++;
      open.set(e.episodeUuid, { atMs: e.atMs, calls: 0 });
    } else if (e.ev === "llm") {
      const a = open.get(e.episodeUuid);
      if (a) a.calls++;
    } else if (e.ev === "end" || e.ev === "abort" || e.ev === "revert") {
      const a = open.get(e.episodeUuid);
      open.delete(e.episodeUuid);
      if (e.ev === "abort") aborts++;
      if (e.ev !== "end") continue;
      ends++;
      callsPerEnded.push(a?.calls ?? 0);
      if (a) longestSeconds = Math.max(longestSeconds, Math.round((e.atMs - a.atMs) / 100) / 10);
    }
  }
  return { claims, ends, aborts, callsPerEnded, longestSeconds };
}

/** A handover row's check: every ended attempt made exactly `calls` LLM calls (none sent twice); without a kill, one claim and one end per repeat. */
function handoverCheck(calls: number, rerunAllowed: boolean): NonNullable<Scenario["after"]> {
  return (events, client, note, view) => {
    const f = handoverFacts(events, client);
    const failures = Object.entries(view?.failuresByCause ?? {}).map(([k, n]) => `${n} × ${k}`).join(", ") || "none";
    note(`journal: ${f.claims} claim(s), ${f.ends} end(s), ${f.aborts} abort(s); LLM calls per ended attempt ${f.callsPerEnded.join(", ")}; longest claim→end ${f.longestSeconds} s; the run's failures: ${failures}`);
    if (f.callsPerEnded.some((n) => n !== calls)) note(`UNEXPECTED: an ended attempt's LLM calls differ from the function's ${calls} (a call sent twice, or one missing)`);
    if (!rerunAllowed && (f.claims !== 2 || f.ends !== 2 || f.aborts !== 0)) note("UNEXPECTED: not one claim and one end per repeat");
  };
}

/**
 * Waits until an LLM call ends `afterMs` or more after its episode's claim (the journal): with the consumer's gate
 * `afterMs` + about 1 s after its start, that is the call the consumer waits for before it hands over. False after `timeoutMs`.
 */
async function untilCallEndsAfterClaim(ctx: ScenarioContext, afterMs: number, timeoutMs = 60_000): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const events = ctx.journal();
    const claimedAt = new Map(events.flatMap((e) => (e.ev === "claim" ? [[e.episodeUuid, e.atMs] as const] : [])));
    if (events.some((e) => e.ev === "llm" && e.atMs - (claimedAt.get(e.episodeUuid) ?? Infinity) >= afterMs)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

export const SCENARIOS: Scenario[] = [
  { name: "end 500 after act", faults: ["end-500-after-act:0.3"] },
  { name: "end dropped after act", faults: ["end-drop-after-act:0.3"] },
  { name: "claim answer lost", faults: ["claim-lost:0.25"] },
  { name: "abort failing", faults: ["abort-500:0.6"], function: "chaos-nan" },
  { name: "LLM 429", faults: ["llm-429:0.3"] },
  { name: "LLM 500", faults: ["llm-500:0.3"] },
  { name: "LLM stall > discard", faults: ["llm-stall:0.2"], spec: { discardEpisodeTimeoutSeconds: 4 } },
  { name: "function throws", function: "chaos-throws" },
  { name: "function hangs", function: "chaos-hangs", spec: { discardEpisodeTimeoutSeconds: 4 } },
  { name: "function returns NaN", function: "chaos-nan" },
  {
    name: "emulator killed+restarted",
    async during(ctx) {
      await ctx.untilEnded(2);
      await ctx.emulator.kill();
      await new Promise((r) => setTimeout(r, 1_000));
      const e = await ctx.respawnEmulator();
      await bootEngine(e.url, ctx.plan.job);
      ctx.note("emulator SIGKILLed after 2 ends, restarted on the same port, engine started again");
    },
  },
  {
    name: "workerd killed+restarted",
    async during(ctx) {
      await ctx.untilEnded(2);
      process.kill(-ctx.worker.hostPid, "SIGKILL");
      await ctx.respawnWorker();
      ctx.note("workerd SIGKILLed after 2 ends, restarted on the same persisted state");
    },
  },
  {
    // the run lease would be 8 × 120 + 60 = 1020 s: only the heartbeat lease (30 s) lets this run finish in time
    name: "consumer killed mid-episode",
    function: "chaos-slow",
    spec: { discardEpisodeTimeoutSeconds: 120 },
    // about 55 s alone (boot, kill, respawn, the 30 s heartbeat lease, the re-runs); 168 s when two suites ran at once
    timeoutMs: 240_000,
    async during(ctx) {
      // the first window's 4 episodes ended; kill once the second window's are in their pause (running, not
      // reporting: a consumer killed after recording its end is resolved by the report lease, not the heartbeat)
      await ctx.untilEnded(4);
      await ctx.until((v) => Number(v.episodes["running"]) > 0 && Number(v.episodes["reporting"]) === 0, 30_000);
      const running = await ctx.api.get(ctx.runId).then((v) => Number(v.episodes["running"]), () => 0);
      process.kill(-ctx.worker.hostPid, "SIGKILL");
      const killedAt = Date.now();
      await ctx.respawnWorker();
      const gaveUp = await ctx.until((v) => (v.failuresByCause["lease_expired"] ?? 0) > 0, 90_000);
      ctx.note(
        gaveUp
          ? `workerd SIGKILLed with ${running} episode(s) running; the run gave up on them (lease_expired) ${Math.round((Date.now() - killedAt) / 1000)} s later`
          : `workerd SIGKILLed with ${running} episode(s) running; no lease_expired within 90 s`,
      );
    },
  },
  {
    name: "engine stop+start by other",
    async during(ctx) {
      await ctx.untilEnded(2);
      const other = new SwarmClient({ baseURL: ctx.emulator.url, clientUuid: "other-operator", logger: SILENT });
      await other.stopEngine();
      await bootEngine(ctx.emulator.url, ctx.plan.job);
      ctx.note("another client stopped and restarted the engine after 2 ends");
    },
  },
  {
    name: "weight sync forced by other",
    async during(ctx) {
      await ctx.untilEnded(1);
      const n = await otherTrainer(ctx.emulator.url, 3, Date.now() + 20_000);
      ctx.note(`another trainer ended ${n} episodes of its own in the run's batch`);
    },
  },
  { name: "two runs, one dataset", alsoRuns: 1 },
  // issue 25: runs sharing one server batch top it up under one plan (the server object's grant), so they accept no
  // more than planned + one batch each and the server trains no more steps than those rewards fill
  { name: "two runs interleaved, maxParallel 8", argv: SHARED_ARGV, spec: { maxParallel: 8 }, alsoRuns: 1, timeoutMs: 300_000 },
  { name: "three runs interleaved, maxParallel 8", argv: SHARED_ARGV, spec: { maxParallel: 8 }, alsoRuns: 2, timeoutMs: 300_000 },
  { name: "two runs interleaved, maxParallel 32", argv: SHARED_ARGV, spec: { maxParallel: 32 }, alsoRuns: 1, timeoutMs: 300_000 },
  { name: "three runs interleaved, maxParallel 32", argv: SHARED_ARGV, spec: { maxParallel: 32 }, alsoRuns: 2, timeoutMs: 300_000 },
  // every end's first answer is a 500 after the server accepted it: the resend is refused, the outcome comes from the
  // server's record (scheduler/unknown-ends), never re-run
  { name: "two runs interleaved, small", argv: SMALL_ARGV, spec: { maxParallel: 8 }, alsoRuns: 1 },
  // two Workers: each one's swarm server object sees only its own run; the other's shows only in the pool information
  { name: "two runs on two Workers", argv: SMALL_ARGV, spec: { maxParallel: 8 }, otherWorkerRuns: 1, timeoutMs: 300_000 },
  { name: "every first end 500 after act", faults: ["end-500-after-act:1::first"], argv: ["--function", "countdown", "--steps", "3", "--batch-size", "4", "--num-repeat", "2", "--seed", "5"], spec: { maxParallel: 8 }, stallBound: true },
  // a gateway in front of the server answers every end and resend 502 HTML (the first 60 of them): the ends are
  // unknown, resent while the pool shows the server still holds them, and the steps take seconds, not the report lease
  { name: "ends 502 HTML (first 60)", faults: ["end-502-html:1:60"], argv: ["--function", "countdown", "--steps", "2", "--batch-size", "4", "--num-repeat", "2", "--seed", "9"], spec: { maxParallel: 8 }, stallBound: true },
  // the same gateway fails every end and resend for a 30 s window (an outage that ends): the steps wait for the outage,
  // not for the report lease
  { name: "ends 502 HTML for 30 s", faults: ["end-502-html:1::30s"], argv: ["--function", "countdown", "--steps", "2", "--batch-size", "4", "--num-repeat", "2", "--seed", "9"], spec: { maxParallel: 8 }, faultWindowS: 30, stallBound: true },
  // the answer of each end that closes a batch is lost (the server accepted it and moved to ROLLING_POST): the resend
  // is refused ("not rolling"), which is ambiguous; the server's record settles it, never a re-run
  { name: "batch-closing end answers dropped", faults: ["end-drop-closing"], argv: ["--function", "countdown", "--steps", "3", "--batch-size", "4", "--num-repeat", "2", "--seed", "17"], spec: { maxParallel: 8 }, stallBound: true },
  {
    name: "stop during WEIGHT_SYNCING",
    stops: true,
    argv: ["--function", "countdown", "--steps", "3", "--batch-size", "2", "--num-repeat", "2", "--seed", "7"],
    async during(ctx) {
      const client = new SwarmClient({ baseURL: ctx.emulator.url, logger: SILENT });
      const until = Date.now() + 60_000;
      let syncing = false;
      while (!syncing && Date.now() < until) {
        syncing = (await client.getEngineStatus().catch(() => null))?.status === "ENGINE.WEIGHT_SYNCING";
        if (!syncing) await new Promise((r) => setTimeout(r, 25));
      }
      if (!syncing) return ctx.note("the engine never reached WEIGHT_SYNCING within 60 s");
      await ctx.api.stop(ctx.runId);
      ctx.note("stop requested while the engine was WEIGHT_SYNCING");
    },
  },
  // issue 20 §3: two runs in the all-agree mode; the first is stopped mid-batch. It votes before it leaves, so the
  // other run's syncs are never held by a listed client that will not agree (it would wait 600 s for it to age out)
  {
    name: "agree mode with a run stopped mid-batch",
    job: { swarmModeSampleCollectionMethod: "rollout_until_all_clients_agree_sync_weight" },
    argv: ["--function", "countdown", "--steps", "3", "--batch-size", "2", "--num-repeat", "2", "--seed", "17"],
    alsoRuns: 1,
    stops: true,
    stallBound: true,
    timeoutMs: 240_000,
    async during(ctx) {
      await ctx.untilEnded(3);
      await ctx.api.stop(ctx.runId);
      ctx.note("the first run was stopped after 3 ends, mid-batch");
    },
  },
  // issue 20 §3: two runs in the all-agree mode reach every sync (5 each) with no stall: each votes once its share of
  // a batch is done, so no batch waits for a listed client to age out (600 s)
  {
    name: "two runs in the all-agree mode",
    job: { swarmModeSampleCollectionMethod: "rollout_until_all_clients_agree_sync_weight" },
    argv: ["--function", "countdown", "--steps", "5", "--batch-size", "2", "--num-repeat", "2", "--seed", "19"],
    alsoRuns: 1,
    stallBound: true,
    timeoutMs: 180_000,
  },
  // the any mode: the first vote syncs; the other run's episodes in flight drain into that batch and its window
  // ends in the next one
  {
    name: "two runs in the any-agree mode",
    job: { swarmModeSampleCollectionMethod: "rollout_until_any_client_agree_sync_weight" },
    argv: ["--function", "countdown", "--steps", "3", "--batch-size", "2", "--num-repeat", "2", "--seed", "23"],
    alsoRuns: 1,
    stallBound: true,
    timeoutMs: 180_000,
  },
  // a run of the tasks method on a server an agree run started in the all mode: it follows the server's method (its
  // pool information) and votes, so it never holds the agree run's syncs, and alone after it (steps 3–4) it still syncs
  {
    name: "a tasks run sharing an all-agree server",
    job: { swarmModeSampleCollectionMethod: "rollout_until_all_clients_agree_sync_weight" },
    argv: ["--function", "countdown", "--steps", "2", "--batch-size", "2", "--num-repeat", "2", "--seed", "29"],
    alsoRuns: 1,
    alsoRunsSpec: { maxSteps: 4, job: { swarmModeSampleCollectionMethod: "rollout_until_finish_enough_tasks" } },
    stallBound: true,
    timeoutMs: 180_000,
  },
  // ---- episodes past the consumer's wall (issue 20 §2, docs/design/long-episodes.md): 0 lost / doubled / left
  // claimed / stranded, and no LLM call sent twice across the handovers (each ended episode's calls on the server
  // are exactly the function's)
  {
    // 31 calls of 3 s: each repeat runs 93 s, handed from the consumer (20 s wall) to its host and on between host legs
    name: "long episode across the wall",
    function: "chaos-long",
    argv: HANDOVER_ARGV,
    llmLatencyMs: 3_000,
    workerVars: HANDOVER_VARS,
    spec: { discardEpisodeTimeoutSeconds: 60 },
    timeoutMs: 240_000,
    after: handoverCheck(31, false),
  },
  {
    // streamed calls of 7 s held open by keepalives: a call open at a gate is finished by the holder that sent it
    name: "long call",
    function: "chaos-long-call",
    argv: HANDOVER_ARGV,
    llmLatencyMs: 7_000,
    workerVars: LONG_CALL_VARS,
    spec: { discardEpisodeTimeoutSeconds: 60 },
    timeoutMs: 240_000,
    after: handoverCheck(7, false),
  },
  {
    // workerd SIGKILLed as the call the consumer waited for at its gate ends: the consumer is handing over
    name: "handover kill",
    function: "chaos-long-short",
    argv: HANDOVER_ARGV,
    llmLatencyMs: 3_000,
    workerVars: HANDOVER_VARS,
    spec: { discardEpisodeTimeoutSeconds: 60 },
    timeoutMs: 240_000,
    async during(ctx) {
      const seen = await untilCallEndsAfterClaim(ctx, 9_000);
      process.kill(-ctx.worker.hostPid, "SIGKILL");
      await ctx.respawnWorker();
      ctx.note(seen ? "workerd SIGKILLed as an LLM call ended 9 s or more after its claim (the consumer at its gate, handing over), restarted on the same state" : "UNEXPECTED: no LLM call ended 9 s after its claim within 60 s");
    },
    after: handoverCheck(11, true),
  },
  // ---- sandboxes (issue 21): in every row 0 sandboxes alive 60 s after their attempt is over, 0 sandbox failures
  // posted as rewards (the chaos function tries to), and the usual 0 lost / doubled / left claimed / stranded
  {
    name: "sandbox: consumer killed mid-command",
    function: "chaos-sandbox-slow",
    sandboxes: true,
    spec: { sandbox: {}, discardEpisodeTimeoutSeconds: 120 },
    async during(ctx) {
      const running = await midCommand(ctx, 4, 1_500, true); // inside the 4 s command
      process.kill(-ctx.worker.hostPid, "SIGKILL");
      await ctx.respawnWorker();
      ctx.note(`workerd SIGKILLed with ${running} episode(s) mid-command; restarted on the same state`);
    },
  },
  {
    name: "sandbox: workerd killed+restarted",
    function: "chaos-sandbox",
    sandboxes: true,
    spec: { sandbox: {} },
    async during(ctx) {
      await ctx.untilEnded(2);
      process.kill(-ctx.worker.hostPid, "SIGKILL");
      await ctx.respawnWorker();
      ctx.note("workerd SIGKILLed after 2 ends, restarted on the same persisted state");
    },
  },
  {
    name: "sandbox: server killed+restarted",
    function: "chaos-sandbox-slow",
    sandboxes: true,
    spec: { sandbox: {} },
    async during(ctx) {
      await midCommand(ctx, 2, 1_500);
      await ctx.respawnSandboxServer();
      ctx.note("sandbox server SIGKILLed mid-command and started again on the same port and root (it reaped what the killed one left)");
    },
  },
  {
    name: "sandbox: run stopped mid-step",
    function: "chaos-sandbox-slow",
    sandboxes: true,
    spec: { sandbox: {} },
    async during(ctx) {
      await midCommand(ctx, 2, 1_000);
      await ctx.api.stop(ctx.runId);
      ctx.note("run stopped while its episodes ran their commands");
    },
  },
  {
    name: "sandbox: create failures at 30 %",
    function: "chaos-sandbox",
    sandboxes: true,
    sandboxCreateFailRate: 0.3,
    argv: ["--function", "countdown", "--steps", "2", "--batch-size", "4", "--num-repeat", "2", "--seed", "3"],
    spec: { sandbox: {} },
  },
  {
    // a third of the attempts start a long command and then hang: past their idle lease (the discard timeout less a
    // margin) the runtime aborts them and the repeat runs again; each old attempt's sandbox is destroyed, the retry
    // gets a fresh one
    name: "sandbox: attempt retried after its lease",
    function: "chaos-sandbox-hangs",
    sandboxes: true,
    spec: { sandbox: {}, discardEpisodeTimeoutSeconds: 4 },
  },
  // ---- dataset hosts (issue 18): the run's dataset on a misbehaving 127.0.0.1 host (test/chaos/dataset-host); each
  // run fails or starts within its bound (harness datasetHostBounds), with the usual 0 lost / doubled / left claimed /
  // stranded
  {
    // rows of the same byte lengths behind the same weak ETag, swapped after 2 ends: the run fails naming the dataset
    // (the per-row digest kept at index time), no row of the new file reaches a task
    name: "dataset: changed mid-run",
    datasetHost: "changed",
    argv: ["--function", "countdown", "--steps", "10", "--batch-size", "2", "--num-repeat", "2", "--seed", "3"],
    timeoutMs: 240_000,
    async during(ctx) {
      await ctx.untilEnded(2);
      ctx.datasetHost?.replace();
      const ended = await ctx.api.get(ctx.runId).then((v) => v.totals.episodesEnded, () => -1);
      ctx.note(`the file was replaced after ${ended} ends (same byte lengths, same weak ETag)`);
    },
  },
  // headers, then nothing: POST /runs is refused (400) or answers 201 indexing and the background pass fails the run
  { name: "dataset: stalled host", datasetHost: "stalled", timeoutMs: 120_000 },
  // 32 B/s for every body: the inline pass gives up, the background pass reads the file and the run starts (or fails
  // within its bound); its row reads trickle too
  { name: "dataset: trickling host", datasetHost: "trickling", timeoutMs: 300_000 },
];

/**
 * The quick scenarios `npm test` runs (each under a minute alone; the sharing rows about one on a loaded machine; "two
 * runs interleaved, maxParallel 8" is issue 25's row: 3 steps of 8 × 4 per run, 25–40 s alone).
 */
export const FAST: readonly string[] = [
  "end 500 after act", "claim answer lost", "LLM 429", "abort failing", "every first end 500 after act", "stop during WEIGHT_SYNCING",
  "two runs interleaved, small", "two runs interleaved, maxParallel 8", "batch-closing end answers dropped", "dataset: changed mid-run", "dataset: stalled host",
  "agree mode with a run stopped mid-batch",
];

/** The quick sandbox scenarios `npm test` runs (test/e2e/sandbox-chaos.test.ts). */
export const FAST_SANDBOX: readonly string[] = ["sandbox: create failures at 30 %", "sandbox: server killed+restarted"];
