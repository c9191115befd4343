/**
 * The API's response schemas (edge/ground/api-contract) hold the Worker's own answer types (issue 17: the CLI is typed
 * from the routes, not from a restated copy): each answer type fits its route's schema, so renaming a field on one
 * side fails the typecheck, and an answer the Worker's own code builds parses.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { AttemptsQuery, type DashboardBody, EpisodesQuery, type EpisodesBody, type MetricsBody, type ReportBody, type RunListBody, RunListingBody, RunViewBody } from "../../../src/edge/ground/api-contract.ts";
import type { DashboardSnapshot } from "../../../src/edge/run/board/snapshot.ts";
import type { RunMetrics } from "../../../src/edge/run/board/metrics.ts";
import { pendingRunView } from "../../../src/edge/run/run-indexing.ts";
import { runListing, type RunListing, type RunReport, type RunView } from "../../../src/edge/run/run-views.ts";
import type { EndedEpisode } from "../../../src/port/index.ts";
import { RunSpec } from "../../../src/scheduler/index.ts";

/** A schema's input type without the index signatures of its loose objects (an interface has none to offer). */
type Known<T> = T extends readonly (infer U)[] ? Known<U>[] : T extends object ? { [K in keyof T as string extends K ? never : K]: Known<T[K]> } : T;
/** `true` when an answer of type A gives every field the schema whose input type is B reads, with its type. */
type Fits<A, B> = [A] extends [Known<B>] ? true : false;

describe("the API's response schemas", () => {
  it("fit the Worker's answer types (checked by the typecheck: a false here does not compile)", () => {
    const fits: Record<string, true> = {
      view: true satisfies Fits<RunView, z.input<typeof RunViewBody>>,
      list: true satisfies Fits<{ runs: RunListing[]; next: string | null }, z.input<typeof RunListBody>>,
      episodes: true satisfies Fits<{ episodes: EndedEpisode[] }, z.input<typeof EpisodesBody>>,
      report: true satisfies Fits<RunReport, z.input<typeof ReportBody>>,
      metrics: true satisfies Fits<RunMetrics, z.input<typeof MetricsBody>>,
      dashboard: true satisfies Fits<DashboardSnapshot, z.input<typeof DashboardBody>>,
    };
    expect(Object.keys(fits)).toHaveLength(6);
  });

  it("parse a view and a listing the Worker builds", () => {
    const spec = RunSpec.parse({ swarms: [{ url: "http://127.0.0.1:1" }], datasets: [{ name: "cd", kind: "countdown" }], function: "countdown" });
    const view = pendingRunView({ input: { runId: "run-1", spec, sources: {}, loadReports: {} }, createdAtMs: 1 }, 2);
    expect(RunViewBody.safeParse(view).success).toBe(true);
    expect(RunListingBody.safeParse(runListing(view)).success).toBe(true);
  });
});

describe("one name per number", () => {
  it("the run's window is `window` on /attempts; `step` there is refused with the fix, and means global_step on /episodes", () => {
    expect(AttemptsQuery.parse({ window: "2" })).toEqual({ window: 2, limit: 1000 });
    const old = AttemptsQuery.safeParse({ step: "2" });
    expect(old.success).toBe(false);
    expect(old.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([["step", "`step` is the server's global_step; the run's 1-based window of these attempts is `window` (e.g. ?window=2)"]]);
    expect(EpisodesQuery.parse({ step: "0" })).toEqual({ step: 0, limit: 1000, offset: 0 });
  });
});
