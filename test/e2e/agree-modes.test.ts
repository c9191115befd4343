/**
 * The agree-to-sync modes on the real stack (test/chaos/harness: the emulator in its own process with its journal,
 * the Worker in local workerd, its Durable Objects, the queue, the functions). Each row compares the server's journal
 * with every run's ledger (0 lost, 0 doubled, 0 left claimed, 0 stranded) and holds every step to the stall bound (a
 * stall: a batch waiting for a listed client that never agrees, until it ages out of the active list, 600 s):
 *  - two runs in the all-agree mode reach 5 syncs, both voting, at least one agreed vote per sync;
 *  - two runs in the any-agree mode: every sync follows a vote, both runs train every step;
 *  - a run of the tasks method sharing a server an agree run started in the all mode follows the server's method and
 *    votes, so it never holds the agree run, and alone afterwards it still syncs;
 *  - the weight-sync hooks (the function's `onWeightSync`, the run's webhook): once per server step with the step's
 *    metrics, a slow, failing or hanging hook logged and never holding training, a hook still running when the run
 *    finishes completed all the same (the object's waitUntil).
 * The row "agree mode with a run stopped mid-batch" runs in the fast chaos subset (test/e2e/chaos-fast.test.ts).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import type { RunLogLine, RunView } from "../../src/cli/dev/runs-api.ts";
import { HOOK_TIMEOUT_MS } from "../../src/edge/run/sync-hooks.ts";
import { HOOK_DELAY_MS, HOOK_FAILS_AT_STEP, HOOK_HANGS_FROM_STEP } from "../chaos/functions.ts";
import { stallBoundSeconds, type ChaosRow, type Scenario, type ScenarioContext } from "../chaos/harness.ts";
import { SCENARIOS } from "../chaos/scenarios.ts";
import { chaosSuite } from "../chaos/suite.ts";

const ALL = "rollout_until_all_clients_agree_sync_weight";
const ANY = "rollout_until_any_client_agree_sync_weight";
const CLEAN = { lost: 0, doubled: 0, leftClaimed: 0, stranded: 0 };

/** What a scenario's runs showed: each run's last view and every log line seen while polling (the view keeps the newest 20). */
interface Watched {
  views: RunView[];
  lines: RunLogLine[][];
}

/**
 * Polls every run of the scenario (every 200 ms) until all finished and `more(lines)` holds (each bounded), keeping
 * their last views and every log line seen.
 */
async function watchRuns(ctx: ScenarioContext, into: Watched, timeoutMs: number, more: (w: Watched) => boolean = () => true): Promise<void> {
  const seen = ctx.runIds.map(() => new Map<string, RunLogLine>());
  const until = Date.now() + timeoutMs;
  let finishedAt: number | null = null;
  while (Date.now() < until) {
    const views = await Promise.all(ctx.runIds.map((id) => ctx.api.get(id).catch(() => null)));
    views.forEach((v, i) => {
      if (!v) return;
      into.views[i] = v;
      for (const l of v.log) seen[i]!.set(`${l.atMs}|${l.message}|${JSON.stringify(l.fields)}`, l);
    });
    into.lines = seen.map((m) => [...m.values()].sort((a, b) => a.atMs - b.atMs));
    if (views.every((v) => v?.phase === "finished")) {
      finishedAt ??= Date.now();
      // what is still to come after the finish (a hook's line) gets 2 × the hook bound
      if (more(into) || Date.now() - finishedAt > 2 * HOOK_TIMEOUT_MS + 5_000) return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The scenario of SCENARIOS named `name`, its runs watched into `into` after its own `during`. */
function watched(name: string, into: Watched): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`no chaos scenario "${name}"`);
  return { ...s, during: async (ctx) => { await s.during?.(ctx); await watchRuns(ctx, into, s.timeoutMs ?? 120_000); } };
}

/** The longest step (window) wall time of any run, s. */
const longestStepS = (w: Watched) => Math.max(0, ...w.views.flatMap((v) => v.steps.map((s) => (s.wallTimeMs ?? 0) / 1000)));

function expectClean(row: ChaosRow, verdicts: string[], w: Watched, s: Scenario): void {
  expect({ lost: row.lost, doubled: row.doubled, leftClaimed: row.leftClaimed, stranded: row.stranded }, row.notes.join("; ")).toEqual(CLEAN);
  expect(row.episodes).toBeGreaterThan(0);
  expect(row.verdict, row.notes.join("; ")).toBe(verdicts.join(" | "));
  expect(w.views).toHaveLength(verdicts.length);
  for (const v of w.views) expect(v.batches).toMatchObject({ episodesUntrained: 0 });
  // no stall: no step of any run waited for a client that never agreed (it would wait 600 s for it to age out)
  expect(longestStepS(w), "the longest step of any run, s").toBeLessThanOrEqual(stallBoundSeconds(s));
}

/** A webhook receiver on 127.0.0.1: every POST body, answering by step (`answer`: status and delay). */
async function webhook(answer: (step: number) => { status: number; delayMs: number }) {
  const posts: Array<{ runId: string; step: number; metrics: Record<string, unknown>; atMs: number }> = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const post = JSON.parse(body) as { runId: string; step: number; metrics: Record<string, unknown> };
      posts.push({ ...post, atMs: Date.now() });
      const a = answer(post.step);
      setTimeout(() => res.writeHead(a.status).end(a.status === 200 ? "ok" : "no"), a.delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, posts };
}

describe("e2e: the agree modes on the real stack", () => {
  const { stack, rows } = chaosSuite();
  let hook: Awaited<ReturnType<typeof webhook>> | undefined;
  afterAll(() => void hook?.server.close());

  it("two runs in the all-agree mode reach 5 syncs with 0 stalls: both vote, at least one agreed vote per sync, none twice for one batch", async () => {
    const w: Watched = { views: [], lines: [] };
    const s = watched("two runs in the all-agree mode", w);
    const row = await stack.run(s);
    rows.push(row);
    expectClean(row, ["finished/maxSteps ok", "finished/maxSteps ok"], w, s);
    expect(row.serverSteps).toBeGreaterThanOrEqual(5);
    for (const v of w.views) {
      expect(v.batches.sampleCollectionMethod).toBe(ALL);
      expect(v.batches.trained).toBeGreaterThanOrEqual(5);
      // one agreed vote per batch at most (the server holds it until the sync wipes it); a run whose first end of a
      // window came just before the other's vote, while the engine's view of the active list lagged, may see that
      // batch close without its vote (spec §7.3): its window ends in the next batch
      expect(v.batches.syncVotesAgreed).toBeGreaterThanOrEqual(1);
      expect(v.batches.syncVotesAgreed).toBeLessThanOrEqual(row.serverSteps!);
    }
    // a sync in the all mode needs a non-empty active list, every client on it agreed: at least one vote per sync
    expect(w.views.reduce((n, v) => n + (v.batches.syncVotesAgreed ?? 0), 0)).toBeGreaterThanOrEqual(row.serverSteps!);
  }, 200_000);

  it("two runs in the any-agree mode: every sync follows a vote, both train every step, nothing lost or stranded", async () => {
    const w: Watched = { views: [], lines: [] };
    const s = watched("two runs in the any-agree mode", w);
    const row = await stack.run(s);
    rows.push(row);
    expectClean(row, ["finished/maxSteps ok", "finished/maxSteps ok"], w, s);
    expect(row.serverSteps).toBeGreaterThanOrEqual(3);
    for (const v of w.views) expect(v.batches.sampleCollectionMethod).toBe(ANY);
    // the server syncs in the any mode only on an agreed vote (the votes are wiped at each sync)
    expect(w.views.reduce((n, v) => n + (v.batches.syncVotesAgreed ?? 0), 0)).toBeGreaterThanOrEqual(row.serverSteps!);
  }, 200_000);

  it("a tasks run sharing an all-agree server follows the server's method and votes: it holds no sync, and alone it still syncs", async () => {
    const w: Watched = { views: [], lines: [] };
    const s = watched("a tasks run sharing an all-agree server", w);
    const row = await stack.run(s);
    rows.push(row);
    expectClean(row, ["finished/maxSteps ok", "finished/maxSteps ok"], w, s);
    const [agree, tasks] = w.views as [RunView, RunView];
    expect(agree.batches.sampleCollectionMethod).toBe(ALL);
    expect(tasks.batches.sampleCollectionMethod).toBe(ALL); // its job says finish_enough_tasks; the server rules
    expect(tasks.steps.filter((st) => st.wallTimeMs !== null)).toHaveLength(4);
    // the batches without the agree run's rewards (after it finished) synced by the tasks run's votes alone
    expect(tasks.batches.trained).toBeGreaterThanOrEqual(4);
    expect(agree.finishedAtMs!).toBeLessThan(tasks.finishedAtMs!);
    expect(tasks.batches.syncVotesAgreed).toBeGreaterThanOrEqual(Math.max(1, row.serverSteps! - agree.batches.trained));
    expect(w.lines[1]!.filter((l) => /engine collects samples by rollout_until_all_clients_agree_sync_weight, not by rollout_until_finish_enough_tasks/.test(l.message))).toHaveLength(1);
    expect(row.serverSteps).toBeGreaterThanOrEqual(4);
  }, 200_000);

  it("the weight-sync hooks are called once per server step with its metrics; a slow, failing or hanging hook is logged and never holds training", async () => {
    // the webhook: slow (past the event that started it) at steps 1 and 3, HTTP 500 at the failing step
    hook = await webhook((step) => (step === HOOK_FAILS_AT_STEP ? { status: 500, delayMs: 0 } : { status: 200, delayMs: HOOK_DELAY_MS }));
    const w: Watched = { views: [], lines: [] };
    const steps = [1, 2, 3];
    const hookLines = (name: string) => (w.lines[0] ?? []).filter((l) => l.message.startsWith(`${name} `));
    const s: Scenario = {
      name: "weight-sync hooks: slow, failing, hanging",
      function: "chaos-hooked",
      argv: ["--function", "countdown", "--steps", String(steps.length), "--batch-size", "2", "--num-repeat", "2", "--seed", "31"],
      spec: { weightSyncWebhook: hook.url },
      stallBound: true,
      // the last step's hooks outlive the run: wait for their lines (the hanging one is logged at the 10 s bound)
      during: (ctx) => watchRuns(ctx, w, 120_000, () => hookLines("onWeightSync").length >= steps.length && hookLines("weightSyncWebhook").length >= steps.length),
    };
    const row = await stack.run(s);
    rows.push(row);
    expectClean(row, ["finished/maxSteps ok"], w, s);
    const view = w.views[0]!;

    // the webhook: one POST per server step, with the run's share of that batch
    expect(hook.posts.map((p) => p.step).sort()).toEqual(steps);
    for (const p of hook.posts) {
      expect(p.runId).toBe(view.runId);
      expect(p.metrics).toMatchObject({ episodes: 4, otherClientsEpisodes: 0 });
      expect([p.step, p.step + 1]).toContain(p.metrics["windows"]); // the next window may have opened in the same decision
      expect(p.metrics["meanReward"]).toBeGreaterThanOrEqual(0);
    }

    // the run's log: one line per hook and step, saying how it went
    const byStep = (name: string) => new Map(hookLines(name).map((l) => [Number(l.fields["step"]), l]));
    expect(hookLines("onWeightSync").map((l) => l.fields["step"]).sort()).toEqual(steps);
    expect(hookLines("weightSyncWebhook").map((l) => l.fields["step"]).sort()).toEqual(steps);
    const fn = byStep("onWeightSync");
    const web = byStep("weightSyncWebhook");
    // step 1: the function's hook (it checks its arguments, else throws) took 3 s and the webhook answered after 3 s:
    // both completed after the alarm that started them had ended
    expect(fn.get(1)?.message).toBe("onWeightSync called");
    expect(web.get(1)?.message).toBe("weightSyncWebhook called");
    expect(fn.get(HOOK_FAILS_AT_STEP)).toMatchObject({ level: "warn", message: "onWeightSync failed; training goes on", fields: { error: `the hook fails on purpose at step ${HOOK_FAILS_AT_STEP}` } });
    expect(web.get(HOOK_FAILS_AT_STEP)).toMatchObject({ level: "warn", message: "weightSyncWebhook failed; training goes on", fields: { error: "HTTP 500" } });
    expect(fn.get(HOOK_HANGS_FROM_STEP)).toMatchObject({ level: "warn", message: `onWeightSync took over ${HOOK_TIMEOUT_MS / 1000} s; training goes on without it` });
    expect(web.get(HOOK_HANGS_FROM_STEP)?.message).toBe("weightSyncWebhook called");
    // the last step's hanging hook never held the run: it finished before the hook's bound, and the hook was still
    // logged afterwards (the alarm that started it had long ended)
    expect(view.finishedAtMs).not.toBeNull();
    expect(view.finishedAtMs!).toBeLessThan(fn.get(HOOK_HANGS_FROM_STEP)!.atMs);
  }, 200_000);
});
