/** A run's cost (edge/run/board/cost): counted use × the dated price table, overrides, estimates labelled. */
import { describe, expect, it } from "vitest";
import { emptyUsage, PRICES, pricesFrom, queueOpsOf, runCost } from "../../../src/edge/run/board/cost.ts";

describe("run cost", () => {
  const usage = {
    ...emptyUsage(),
    episodeInvocations: 1_000, apiRequests: 200, doRequests: 5_000, websocketMessages: 40, otherDoRequests: 30, rowsWritten: 20_000,
    storedBytes: 2_000_000, queueMessages: 1_000, queueOps: 3_000, r2Puts: 1_000, r2Bytes: 50_000_000, workerWallMs: 900_000,
  };
  const run = { steps: 4, episodes: 1_000, activeMs: 60_000, transcriptRetentionDays: 30 };

  it("prices every line by hand and sums them; per step and per 1,000 episodes divide the total", () => {
    const c = runCost(usage, PRICES, run);
    const byItem = Object.fromEntries(c.lines.map((l) => [l.item, l]));
    const M = 1e6;
    const hand = {
      "Worker requests": (1_200 * 0.3) / M,
      "Worker CPU time": ((1_000 * PRICES.cpuMsPerEpisode + 200 * PRICES.cpuMsPerApiRequest) * 0.02) / M,
      "Durable Object requests": ((5_000 + 30 + 2) * 0.15) / M,
      "Durable Object duration": (60 * 0.128 * 12.5) / M,
      "Durable Object rows written": (20_000 * 1) / M,
      "Queue operations": (3_000 * 0.4) / M,
      "R2 writes (Class A)": (1_000 * 4.5) / M,
      "R2 storage": 0.05 * 0.015,
    };
    for (const [item, usd] of Object.entries(hand)) expect(byItem[item]!.usd, item).toBeCloseTo(usd, 12);
    const total = Object.values(hand).reduce((a, b) => a + b, 0);
    expect(c.totalUsd).toBeCloseTo(total, 12);
    expect(c.perStepUsd).toBeCloseTo(total / 4, 12);
    expect(c.per1000EpisodesUsd).toBeCloseTo(total, 12);
    // CPU time, the object's duration and R2 storage are estimates, and say so
    expect(c.lines.filter((l) => l.estimate).map((l) => l.item)).toEqual(["Worker CPU time", "Durable Object duration", "R2 storage"]);
    expect(c.estimatedUsd).toBeCloseTo(hand["Worker CPU time"] + hand["Durable Object duration"] + hand["R2 storage"], 12);
    expect(c.monthly[0]).toMatchObject({ item: "Durable Object storage", quantity: 0.002, usd: 0.002 * 0.2 });
    // no sandbox line without sandbox seconds; one with them
    expect(byItem["Sandboxes"]).toBeUndefined();
    expect(runCost({ ...usage, sandboxSeconds: 100 }, PRICES, run).lines.at(-1)).toMatchObject({ item: "Sandboxes", usd: 100 * PRICES.sandboxSecond });
  });

  it("no step or episode yet: no per-step or per-1,000 figure", () => {
    expect(runCost(emptyUsage(), PRICES, { steps: 0, episodes: 0, activeMs: 0, transcriptRetentionDays: 14 })).toMatchObject({ totalUsd: 0, perStepUsd: null, per1000EpisodesUsd: null });
  });

  it("AJET_PRICES overrides known prices; anything else is named and ignored", () => {
    expect(pricesFrom(undefined)).toEqual({ prices: PRICES, problem: null });
    const ok = pricesFrom('{"workerRequestsPerMillion": 0.5, "cpuMsPerEpisode": 20}');
    expect(ok.problem).toBeNull();
    expect(ok.prices).toMatchObject({ workerRequestsPerMillion: 0.5, cpuMsPerEpisode: 20, doRequestsPerMillion: 0.15, asOf: `${PRICES.asOf}, overridden by AJET_PRICES` });
    const bad = pricesFrom('{"workerRequestsPerMillion": -1, "nope": 2, "doRequestsPerMillion": 0.1}');
    expect(bad.prices.doRequestsPerMillion).toBe(0.1);
    expect(bad.prices.workerRequestsPerMillion).toBe(0.3);
    expect(bad.problem).toMatch(/^AJET_PRICES: workerRequestsPerMillion, nope ignored/);
    expect(pricesFrom("{not json").problem).toMatch(/not JSON/);
    expect(pricesFrom("[1]").problem).toMatch(/must be a JSON object/);
  });

  it("a queue message takes write, read and delete per 64 KB", () => {
    expect(queueOpsOf(500)).toBe(3);
    expect(queueOpsOf(64_000)).toBe(6);
  });
});
