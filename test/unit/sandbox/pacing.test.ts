/**
 * The pacing of sandbox creations (sandbox/pacing): a one-second bucket of `createsPerSecond`, a go delay that
 * spreads a burst over that second, `wait` at the live cap or without a token; and the run spec's `sandbox` block
 * with its defaults and its one-line refusals.
 */
import { describe, expect, it } from "vitest";
import { freshPacer, paceIntent, type PacerState } from "../../../src/sandbox/pacing.ts";
import { SANDBOX_DEFAULTS, SandboxRunConfig } from "../../../src/port/sandbox.ts";
import { mulberry32 } from "../../../src/util/mulberry32.ts";

describe("paceIntent", () => {
  it("a full bucket lets one second's worth go, spread over that second; then waits for the next token", () => {
    let state: PacerState = freshPacer(0, 10);
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = paceIntent(state, { nowMs: 0, live: i, maxLive: 100, createsPerSecond: 10, u: 0.999 });
      expect(r.answer.status).toBe("go");
      if (r.answer.status === "go") delays.push(r.answer.delayMs);
      state = r.state;
    }
    expect(delays[0]).toBe(100); // the first of a burst barely waits
    expect(delays.at(-1)).toBe(999); // the last one almost a second
    expect([...delays].sort((a, b) => a - b)).toEqual(delays);
    const eleventh = paceIntent(state, { nowMs: 0, live: 10, maxLive: 100, createsPerSecond: 10, u: 0 });
    expect(eleventh.answer).toEqual({ status: "wait", retryInMs: 100, reason: "at the run's create rate of 10/s (sandbox.createsPerSecond)" });
    // 100 ms later a token is back
    expect(paceIntent(eleventh.state, { nowMs: 100, live: 10, maxLive: 100, createsPerSecond: 10, u: 0 }).answer.status).toBe("go");
  });

  it("at the live cap nothing goes, whatever the bucket holds", () => {
    const r = paceIntent(freshPacer(0, 10), { nowMs: 5_000, live: 8, maxLive: 8, createsPerSecond: 10, u: 0 });
    expect(r.answer).toEqual({ status: "wait", retryInMs: 500, reason: "at the run's cap of 8 live sandboxes (sandbox.maxLive)" });
    expect(r.state.tokens).toBe(10);
  });

  it("over a minute of constant demand the creations never exceed the rate by more than the one-second burst", () => {
    const rate = 10;
    let state = freshPacer(0, rate);
    const draw = mulberry32(3);
    const goes: number[] = [];
    for (let t = 0; t < 60_000; t += 10) {
      const r = paceIntent(state, { nowMs: t, live: 0, maxLive: 1_000, createsPerSecond: rate, u: draw() });
      state = r.state;
      if (r.answer.status === "go") goes.push(t + r.answer.delayMs);
    }
    expect(goes.length).toBeLessThanOrEqual(60 * rate + rate);
    expect(goes.length).toBeGreaterThanOrEqual(60 * rate - 1);
    // in any one-second window: at most two seconds' worth (a full bucket plus the refill)
    const sorted = [...goes].sort((a, b) => a - b);
    let worst = 0;
    for (let i = 0, j = 0; i < sorted.length; i++) {
      while (sorted[i]! - sorted[j]! >= 1_000) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(worst).toBeLessThanOrEqual(2 * rate);
  });
});

describe("the run spec's sandbox block", () => {
  it("{} enables sandboxes with the documented defaults", () => {
    expect(SandboxRunConfig.parse({})).toEqual({
      enabled: true,
      instanceType: SANDBOX_DEFAULTS.instanceType,
      createsPerSecond: 10,
      commandTimeoutSeconds: 60,
      maxOutputBytes: 1_048_576,
      secrets: [],
    });
  });

  it("refuses bad values with the field and the fix", () => {
    const issues = (v: unknown) => SandboxRunConfig.safeParse(v).error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    expect(issues({ instanceType: "huge" })).toEqual(["instanceType: sandbox.instanceType must be one of lite, basic, standard-1, standard-2, standard-3, standard-4"]);
    expect(issues({ maxOutputBytes: 10 })).toEqual(["maxOutputBytes: sandbox.maxOutputBytes must be ≥ 1024 bytes, e.g. 1048576"]);
    expect(issues({ maxLive: 0 })).toEqual(["maxLive: sandbox.maxLive must be ≥ 1, e.g. 64"]);
    expect(issues({ secrets: ["not a name"] })).toEqual(["secrets.0: sandbox.secrets lists secret names such as GITHUB_TOKEN"]);
    expect(issues({ image: "x" })?.[0]).toMatch(/image/);
  });
});
