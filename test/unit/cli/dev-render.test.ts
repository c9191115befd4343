/**
 * What `ajet-edge dev` prints: progress from a status view (TTY line and plain lines, with their pacing), the
 * summary table, the Worker's log lines made compact, API issues, the JSON summary, and the printer that keeps the
 * TTY line intact.
 */
import { describe, expect, it } from "vitest";
import { ProgressPrinter, RepeatLimiter } from "../../../src/cli/dev/output.ts";
import {
  formatWorkerLog, progressKey, progressOf, recentRewards, renderIssues, renderProgressLine, renderProgressPlain,
  renderSummary, shouldPrintPlain, type Progress,
} from "../../../src/cli/dev/render.ts";
import { summaryJson } from "../../../src/cli/dev/summary-json.ts";
import { midRun, step } from "./_fixtures.ts";

const ctx = { episodesPerStep: 32, steps: 3, elapsedMs: 12_400 };

describe("dev progress", () => {
  it("derives the progress of a run in the middle of a step", () => {
    expect(progressOf(midRun(), ctx)).toEqual({
      phase: "running", stopping: false, elapsedMs: 12_400, engine: "ROLLING", globalStep: 2, step: 2, stepsTotal: 3,
      episodesDone: 20, episodesTarget: 32, meanReward: 0.45, training: false, stepRewards: [0.25], inFlight: 12, failedAttempts: 0,
    });
  });

  it("renders a plain line and a TTY line (cut to the terminal width)", () => {
    const p = progressOf(midRun(), ctx);
    expect(renderProgressPlain(p)).toBe("[ 12.4s] engine ROLLING  global step 2  step 2/3  episodes 20/32  mean reward 0.450  step rewards 0.250  in flight 12");
    expect(renderProgressLine(p, 200)).toBe(" 12.4s | engine ROLLING | global step 2 | step 2/3 | episodes 20/32 | mean reward 0.450 | step rewards 0.250 | in flight 12");
    expect(renderProgressLine(p, 30)).toBe(" 12.4s | engine ROLLING | glo…");
  });

  it("marks a global step as last seen while the Worker cannot reach the server, and says when the Worker is silent", () => {
    const unreachable = progressOf(midRun({ engines: [{ swarm: "default", engineStatus: "ENGINE.CANNOT_CONNECT", globalStep: 10, seenAtMs: 0 }], globalStep: 10 }), ctx);
    expect(progressKey(unreachable)).toMatch(/^engine CANNOT_CONNECT {2}global step 10 \(last seen\) {2}step 2\/3/);
    const silent = { ...progressOf(midRun(), ctx), workerSilentMs: 12_300 };
    expect(progressKey(silent)).toMatch(/^Worker not answering for 10s {2}engine ROLLING {2}global step 2 {2}/);
    expect(progressKey({ ...silent, workerSilentMs: 4_999 })).toMatch(/^engine ROLLING/);
  });

  it("shows training, stopping, failures and every engine of a multi-swarm run", () => {
    const training = midRun({
      engines: [
        { swarm: "policy", engineStatus: "ENGINE.WEIGHT_SYNCING", globalStep: 2, seenAtMs: 0 },
        { swarm: "judge", engineStatus: "ENGINE.ROLLING", globalStep: 7, seenAtMs: 0 },
      ],
      currentWindow: { windowIndex: 1, globalStep: 2, groupsOpened: 8, groupsResolved: 8, episodesEnded: 32, meanReward: 0.5, waitingForEngine: true },
      totals: { ...midRun().totals, attemptsFailed: 2 },
    });
    expect(progressKey(progressOf(training, ctx))).toBe(
      "engine policy WEIGHT_SYNCING, judge ROLLING  global step 2  step 2/3 (training)  episodes 32/32  mean reward 0.500  step rewards 0.250  in flight 12  failed attempts 2",
    );
    expect(progressKey(progressOf(training, { ...ctx, stopping: true }))).toMatch(/^stopping \(draining\) {2}engine .* step 2\/3 {2}episodes/);
    expect(progressKey(progressOf(midRun({ phase: "finishing" }), ctx))).toMatch(/^finishing {2}engine ROLLING/);
  });

  it("an eval run counts the episodes of the whole run", () => {
    const p = progressOf(midRun({ episodeType: "eval", currentWindow: null, steps: [] }), { ...ctx, steps: null, totalEpisodes: 64 });
    expect(progressKey(p)).toBe("engine ROLLING  global step 2  episodes 52/64  mean reward 0.330  in flight 12");
  });

  it("shows only the last 5 step rewards, with … when older ones are left out", () => {
    const rewards = [0.1, 0.2, 0.3, 0.4, 0.5, 0.61, 0.72, 0.8];
    expect(recentRewards(rewards.slice(0, 5))).toBe("0.100 0.200 0.300 0.400 0.500");
    expect(recentRewards(rewards)).toBe("… 0.400 0.500 0.610 0.720 0.800");
    const steps = rewards.map((r, i) => step(i, 32, r, 2_000));
    const line = renderProgressPlain(progressOf(midRun({ steps: [...steps, step(8, 3, 0.9, null)], currentWindow: null }), ctx));
    expect(line).toContain("  step rewards … 0.400 0.500 0.610 0.720 0.800  in flight 12");
    expect(line).not.toContain("0.300");
  });

  it("paces plain lines: on change, else every heartbeat", () => {
    expect(shouldPrintPlain(null, "a", 0)).toBe(true);
    expect(shouldPrintPlain({ key: "a", atMs: 0 }, "a", 4_999)).toBe(false);
    expect(shouldPrintPlain({ key: "a", atMs: 0 }, "a", 5_000)).toBe(true);
    expect(shouldPrintPlain({ key: "a", atMs: 0 }, "b", 1)).toBe(true);
  });
});

describe("dev summary", () => {
  const summary = {
    episodeType: "train" as const, stopReason: "maxSteps" as const, wallTimeMs: 7_100, failuresByCause: { no_llm_call: 1 }, droppedGroups: [],
    steps: [step(0, 32, 0.25, 2_400), step(1, 32, 0.5, 2_200), step(2, 31, 0.8125, 2_500)],
    totals: { ...midRun().totals, windows: 3, episodesEnded: 95, meanReward: 0.52 },
  };

  it("renders one row per step, a total row and the stop reason", () => {
    expect(renderSummary(summary, { episodesPerStep: 32 })).toBe(
      [
        " step  global step  episodes  mean reward  wall time",
        "    1            1     32/32        0.250       2.4s",
        "    2            2     32/32        0.500       2.2s",
        "    3            3     31/32        0.813       2.5s",
        "total                     95        0.520       7.1s",
        "stop reason: maxSteps; failed attempts: no_llm_call 1; dropped groups: none",
      ].join("\n"),
    );
    expect(renderSummary({ ...summary, episodeType: "eval", steps: [], stopReason: "epochsDone", failuresByCause: {} }, { episodesPerStep: 32 })).toBe(
      "95 episodes, mean reward 0.520, wall time 7.1s\nstop reason: epochsDone; failed attempts: none; dropped groups: none",
    );
  });

  it("adds one batch-truth line when a wipe was re-run, a batch topped up, or rewards were left untrained", () => {
    const wiped = { ...summary, totals: { ...summary.totals, episodesWiped: 6, groupsRerun: 3, groupsToppedUp: 2 }, untrainedRewards: 0 };
    expect(renderSummary(wiped, { episodesPerStep: 32 }).split("\n").at(-1)).toBe(
      "server batches: 6 rewards wiped before training (3 groups re-run); 2 top-up groups; untrained rewards: 0",
    );
    expect(renderSummary({ ...summary, untrainedRewards: 12 }, { episodesPerStep: 32 }).split("\n").at(-1)).toBe(
      "server batches: 0 rewards wiped before training (0 groups re-run); 0 top-up groups; untrained rewards: 12",
    );
  });

  it("a train run stopped before any step says so instead of an eval-style total; causes most frequent first", () => {
    const none = { ...summary, steps: [], stopReason: "stopRequested" as const, failuresByCause: { expired: 1, invalid_task: 12 }, totals: { ...summary.totals, episodesEnded: 0, meanReward: null } };
    expect(renderSummary(none, { episodesPerStep: 32 })).toBe(
      "no training step completed\nstop reason: stopRequested; failed attempts: invalid_task 12, expired 1; dropped groups: none",
    );
  });

  it("the JSON summary has 1-based steps, totals, servers and what was left claimed", () => {
    const json = summaryJson({
      runId: "run-1", outcome: "finished", exitCode: 0, report: { summary: { ...summary, phase: "finished", startedAtMs: 0, finishedAtMs: 7_100, claimFailuresByKind: {}, firstFailure: null, untrainedRewards: 0, verdict: "trained" as const }, eval: null },
      last: null, session: { swarms: [{ name: "default", url: "http://127.0.0.1:1", emulator: null }] }, claimedLeft: null,
    });
    expect(json.steps[2]).toEqual({ step: 3, globalStep: 3, episodes: 31, meanReward: 0.8125, wallTimeMs: 2_500 });
    expect(json.failure).toBeNull();
    expect(json).toMatchObject({ stopReason: "maxSteps", wallTimeMs: 7_100, totals: { episodesEnded: 95, meanReward: 0.52, attemptsFailed: 0, groupsDropped: 0 }, swarms: [{ name: "default", emulator: false }], claimedLeft: null });
  });

  it("falls back to the last status view when the report is missing", () => {
    const json = summaryJson({ runId: "run-1", outcome: "interrupted", exitCode: 130, report: null, last: midRun(), session: { swarms: [] }, claimedLeft: 0 });
    expect(json.steps.map((s) => s.episodes)).toEqual([32, 20]);
    expect(json).toMatchObject({ stopReason: null, wallTimeMs: null, totals: { episodesEnded: 52 }, claimedLeft: 0 });
  });
});

describe("dev log lines", () => {
  it("makes wrangler's coloured warning with the Worker's JSON one compact line", () => {
    const raw = '\x1b[33m▲ \x1b[43;33m[\x1b[43;30mWARNING\x1b[43;33m]\x1b[0m \x1b[1m{"level":"warn","msg":"episode stale","run":"run-1","episode":"countdown/0/3#1","attempt":1}\x1b[0m';
    expect(formatWorkerLog(raw)).toBe("[worker warn] episode stale episode=countdown/0/3#1 attempt=1");
    expect(formatWorkerLog("✘ [ERROR] boom")).toBe("[worker error] boom");
    expect(formatWorkerLog("[wrangler:info] QUEUE ajet-episodes 8/8")).toBe("[worker info] QUEUE ajet-episodes 8/8");
    expect(formatWorkerLog("  ")).toBeNull();
  });

  it("prints API issues as indented path: message lines", () => {
    expect(renderIssues([{ path: "datasets.0.weight", message: "weight must be > 0" }, { path: "function", message: 'no rollout function "x"' }])).toBe(
      '  datasets.0.weight: weight must be > 0\n  function: no rollout function "x"',
    );
  });
});

describe("ProgressPrinter", () => {
  const p: Progress = progressOf(midRun(), ctx);

  it("on a TTY redraws one line and clears it before an ordinary line", () => {
    const out: string[] = [];
    const printer = new ProgressPrinter((t) => out.push(t), true, () => 200);
    printer.progress(p, 0);
    printer.progress(p, 1);
    printer.line("note");
    printer.progress(p, 2);
    printer.done();
    const line = renderProgressLine(p, 200);
    expect(out).toEqual([`\r\x1b[2K${line}`, `\r\x1b[2K${line}`, "\r\x1b[2K", "note\n", `\r\x1b[2K${line}`, "\n"]);
  });

  it("elsewhere prints a plain line only when the progress changed or the heartbeat is due", () => {
    const out: string[] = [];
    const printer = new ProgressPrinter((t) => out.push(t), false, () => 200);
    printer.progress(p, 0);
    printer.progress({ ...p, elapsedMs: 13_000 }, 600);
    printer.progress({ ...p, episodesDone: 21 }, 1_000);
    printer.progress({ ...p, episodesDone: 21 }, 6_000);
    printer.done();
    expect(out.map((l) => l.replace(/^\[.{6}\] /, "").match(/episodes \d+/)?.[0])).toEqual(["episodes 20", "episodes 21", "episodes 21"]);
    expect(out.every((l) => l.endsWith("\n"))).toBe(true);
  });
});

describe("RepeatLimiter", () => {
  it("lets 3 lines of a kind through, counts the rest, and starts over after a flush", () => {
    const limiter = new RepeatLimiter(3);
    const stale = (i: number) => `[worker warn] episode stale episode=countdown/0/${i}#0 kind=stale`;
    const admitted = [0, 1, 2, 3, 4].map((i) => limiter.admit(stale(i)));
    expect(admitted).toEqual([true, true, true, false, false]);
    expect(limiter.admit("[worker error] boom")).toBe(true);
    expect(limiter.flush()).toEqual([["[worker warn] episode stale", 2]]);
    expect(limiter.flush()).toEqual([]);
    expect(limiter.admit(stale(5))).toBe(true);
  });
});
