/**
 * One-time hints while a dev run is followed (clock injected, no sleeps): an engine that stays OFFLINE under
 * --no-start-engine, an unreachable server, an engine that never reached ROLLING, and a first step with mean
 * reward 0 against an external server — each printed once, not on every poll.
 */
import { describe, expect, it } from "vitest";
import { DevHints } from "../../../src/cli/dev/hints.ts";
import type { RunView } from "../../../src/cli/dev/runs-api.ts";
import { midRun, step } from "./_fixtures.ts";

const URL = "http://gpu:10086";
const engine = (engineStatus: string): RunView["engines"] => [{ swarm: "default", engineStatus, globalStep: null, seenAtMs: 0 }];
const waiting = (engineStatus: string) => midRun({ engines: engine(engineStatus), steps: [], currentWindow: null, globalStep: null });
const hints = (o: { startEngine?: boolean; external?: boolean } = {}) =>
  new DevHints({ swarmUrls: new Map([["default", URL]]), startEngine: o.startEngine ?? false, external: o.external ?? true });

/** Feeds the same view every 5 s from 0 to `untilMs`; @returns every hint line with the time it came. */
function poll(h: DevHints, view: RunView, untilMs: number, fromMs = 0): [number, string][] {
  const out: [number, string][] = [];
  for (let t = fromMs; t <= untilMs; t += 5_000) for (const line of h.observe(view, t)) out.push([t, line]);
  return out;
}

describe("dev hints", () => {
  it("an OFFLINE engine with --no-start-engine: one hint after 15 s, not on every poll", () => {
    expect(poll(hints(), waiting("ENGINE.OFFLINE"), 60_000)).toEqual([
      [15_000, `hint: the engine at ${URL} is OFFLINE (for 15 s); start it (drop --no-start-engine and the Worker syncs the job and starts it) or check the server`],
    ]);
  });

  it("an engine dev started that went OFFLINE points at the server's log; an unreachable server says so", () => {
    expect(poll(hints({ startEngine: true }), waiting("ENGINE.OFFLINE"), 20_000).map(([, l]) => l)).toEqual([
      `hint: the engine at ${URL} has been OFFLINE for 15 s after it was started; check the swarm server's log (it may have stopped or failed to boot)`,
    ]);
    expect(poll(hints(), waiting("ENGINE.CANNOT_CONNECT"), 20_000).map(([, l]) => l)).toEqual([
      `hint: the Worker cannot reach the swarm server at ${URL} (for 15 s); check that it is running and reachable from here`,
    ]);
  });

  it("the clock restarts when the status changes; a status never ROLLING gets its own hint", () => {
    const h = hints();
    expect(poll(h, waiting("ENGINE.OFFLINE"), 10_000)).toEqual([]);
    expect(poll(h, waiting("ENGINE.BOOTING"), 25_000, 15_000)).toEqual([]);
    expect(poll(h, waiting("ENGINE.BOOTING"), 30_000, 30_000)).toEqual([
      [30_000, `hint: the engine at ${URL} is BOOTING, not ROLLING yet after 15 s; the run waits for ROLLING (a real server can take minutes to load the model)`],
    ]);
  });

  it("no hint for an engine that is ROLLING, training after ROLLING, or a run that drains", () => {
    const h = hints();
    expect(poll(h, waiting("ENGINE.ROLLING"), 5_000)).toEqual([]);
    expect(poll(h, waiting("ENGINE.WEIGHT_SYNCING"), 60_000, 10_000)).toEqual([]);
    expect(poll(hints(), { ...waiting("ENGINE.OFFLINE"), phase: "draining" }, 60_000)).toEqual([]);
  });

  it("step 1 with mean reward 0 against an external server: one hint about the emulator's answer key", () => {
    const zero = midRun({ steps: [step(0, 32, 0, 2_000), step(1, 4, 0, null)] });
    const h = hints({ external: true });
    expect(h.observe(zero, 0)).toEqual([
      `hint: step 1's mean reward is 0.000 with ${URL}; a standalone 'ajet-edge emulator' answers correctly only what its answer key holds — start it with --answer-key FILE (rows of your tasks), or check the function's reward`,
    ]);
    expect(h.observe(zero, 5_000)).toEqual([]);
    expect(hints({ external: false }).observe(zero, 0)).toEqual([]);
    expect(hints({ external: true }).observe(midRun(), 0)).toEqual([]);
  });
});
