/**
 * `ajet-edge metrics RUN --format csv|jsonl|json` and the signals and cost under `status`, against a fake Worker
 * whose bodies are built by the Worker's own export (edge/run/board/metrics and cost).
 */
import { describe, expect, it } from "vitest";
import { runMetricsCommand } from "../../../src/cli/commands/metrics.ts";
import { runStatusCommand } from "../../../src/cli/commands/status.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import { emptyUsage, PRICES, runCost } from "../../../src/edge/run/board/cost.ts";
import { metricsCsv, metricsJsonl, runMetrics } from "../../../src/edge/run/board/metrics.ts";

const W = "http://127.0.0.1:8787";
const NOW = 1_800_000_000_000;

const row = (key: string, reward: number, over: Partial<AttemptRow> = {}): AttemptRow => ({
  episodeKey: key, attempt: 1, taskId: "t", source: "s", repeat: 0, windowIndex: 0, globalStep: 1, kind: "ended", reward, swarmRewards: {}, logMetrics: {},
  cause: null, durationMs: 1000, atMs: 5_000, claimedAtMs: 1_000,
  signals: { llmCalls: 2, toolCalls: 1, responseChars: 120, promptTokens: 30, completionTokens: 40, lengthCut: 0, callMs: [400, 600], callTokens: [20, 20], wallMs: 1500, transcriptBytes: 0, sandboxSeconds: 0 },
  ...over,
});
const metrics = {
  ...runMetrics("run-a", [row("s/0/0#0", 1), row("s/0/0#1", 1), row("s/0/1#0", 0), row("s/0/1#1", 1)], ["s"], ["default"], 1, { closedAtMs: { 1: 8_000 }, marks: [] }),
  cost: runCost({ ...emptyUsage(), episodeInvocations: 4, doRequests: 40 }, PRICES, { steps: 1, episodes: 4, activeMs: 10_000, transcriptRetentionDays: 14 }),
};

function fakeWorker(routes: Record<string, [number, string]>) {
  const calls: string[] = [];
  const fn = (async (input: URL | string) => {
    const key = String(input).replace(W, "");
    calls.push(key);
    const route = routes[key];
    return route ? new Response(route[1], { status: route[0] }) : new Response(JSON.stringify({ error: { message: `no route ${key}` } }), { status: 404 });
  }) as typeof fetch;
  return { fn, calls };
}

describe("ajet-edge metrics", () => {
  const routes: Record<string, [number, string]> = {
    "/runs/run-a/metrics": [200, JSON.stringify(metrics)],
    "/runs/run-a/metrics?format=csv": [200, metricsCsv(metrics)],
    "/runs/run-a/metrics?format=jsonl": [200, metricsJsonl(metrics)],
  };

  it("prints the CSV by default, JSON Lines with --format jsonl, the whole export with --format json", async () => {
    const w = fakeWorker(routes);
    for (const [flags, expected] of [[[], metricsCsv(metrics)], [["--format", "jsonl"], metricsJsonl(metrics)], [["--format", "json"], `${JSON.stringify(metrics, null, 2)}\n`]] as const) {
      const io = memoryIo();
      expect(await runMetricsCommand(["run-a", "--worker", W, ...flags], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
      expect(io.stdout.join("")).toBe(expected);
    }
    const first = JSON.parse(metricsJsonl(metrics).split("\n")[0]!) as Record<string, unknown>;
    // the GRPO share: group s/0/0 scored 1 and 1 (no signal), s/0/1 scored 0 and 1
    expect(first).toMatchObject({ window: 1, groups: 2, zero_adv_share: 0.5, zero_adv_all1_share: 0.5, llm_latency_p50_ms: 400, llm_latency_p95_ms: 600, rollout_ms: 4_000, trainer_wait_ms: 3_000 });
  });

  it("an unknown run: the API's line, exit 1; a wrong --format names the choices", async () => {
    const io = memoryIo();
    expect(await runMetricsCommand(["run-b", "--worker", W, "--format", "jsonl"], io, { AJET_API_TOKEN: "t" }, fakeWorker(routes).fn)).toBe(1);
    expect(io.stderr.join("")).toBe(`ajet-edge metrics: no run run-b on ${W}; list the runs with \`ajet-edge runs --worker ${W}\`\n`);
    await expect(runMetricsCommand(["run-a", "--worker", W, "--format", "tsv"], memoryIo(), { AJET_API_TOKEN: "t" }, fakeWorker(routes).fn)).rejects.toThrow(/--format must be csv, jsonl or json/);
  });

  it("status shows the learning signals per step and the estimated cost", async () => {
    const view = {
      runId: "run-a", function: "countdown", createdAtMs: NOW - 5_000, phase: "finished", stopReason: "maxSteps", episodeType: "train",
      engines: [{ swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2 }], globalStep: 2, currentWindow: null,
      episodes: { queued: 0, dispatched: 0, running: 0, reporting: 0, ended: 4, failed: 0, aborted: 0, dropped: 0, inFlight: 0 },
      steps: [{ windowIndex: 0, globalStep: 1, episodesEnded: 4, meanReward: 0.75, wallTimeMs: 2100 }],
      totals: { episodesEnded: 4 }, failuresByCause: {}, log: [], waitingFor: null, failure: null, sources: [],
    };
    const io = { ...memoryIo(), now: () => NOW };
    expect(await runStatusCommand(["run-a", "--worker", W], io, { AJET_API_TOKEN: "t" }, fakeWorker({ ...routes, "/runs/run-a": [200, JSON.stringify(view)] }).fn)).toBe(0);
    const out = io.stdout.join("");
    expect(out).toMatch(/learning signals:\nstep\s+no-signal groups \(0s\/1s\)\s+answer chars mean\/p95/);
    expect(out).toMatch(/\n\s+1\s+50% of 2 \(0%\/50%\)\s+120\/120\s+40\/40\s+0%\s+400\/600ms\s+40\s+2\.0\s+1\.0\s+4\.0s\s+3\.0s\s+-\n/);
    expect(out).toContain(`estimated cost on Cloudflare: $${metrics.cost.totalUsd.toPrecision(3)} (`);
  });
});
