/**
 * The status watch (src/client/status-watch.ts, spec §4.5, BC-25): what counts as having seen the engine up (so a
 * later OFFLINE means it died), when the first poll waits, what each poll may take of the deadline, which failed
 * polls it rides out, and what it logs.
 */
import { describe, expect, it } from "vitest";
import { SwarmAPIError, SwarmConnectionError, SwarmDeadlineError, SwarmProtocolError, SwarmServerOfflineError } from "../../../src/client/index.ts";
import { observeStatus, watchEngineStatus, type StatusWatchDeps } from "../../../src/client/status-watch.ts";
import { DEFAULT_BACKOFF } from "../../../src/client/timing.ts";
import type { CannotConnectSnapshot, EngineStatusSnapshot } from "../../../src/client/types.ts";
import { ENGINE } from "../../../src/protocol/index.ts";
import { fakeClock, recordingLogger } from "./_support.ts";

type Answer = EngineStatusSnapshot | CannotConnectSnapshot;
const snap = (status: string, globalStep: number | null = 1): Answer => ({ status, detail: null, globalStep } as Answer);
const cannot = (error: SwarmConnectionError): Answer => ({ status: "ENGINE.CANNOT_CONNECT", detail: null, globalStep: null, error });

/** Deps answering polls from `answers` in order (the last repeats), recording each poll's timeout. */
function deps(answers: Answer[], pollTimeoutMs = 30_000) {
  const clock = fakeClock(0);
  const log = recordingLogger();
  const timeouts: number[] = [];
  let n = 0;
  const d: StatusWatchDeps = {
    clock, backoff: DEFAULT_BACKOFF, logger: log.logger, pollTimeoutMs,
    poll: async (o) => {
      timeouts.push(o.timeoutMs!);
      return answers[Math.min(n++, answers.length - 1)]!;
    },
  };
  return { d, clock, log, timeouts, polls: () => n };
}

describe("observeStatus: OFFLINE after the engine was seen up means it went down", () => {
  it("a real non-OFFLINE status marks the engine as seen up; the pseudo statuses do not", () => {
    for (const pseudo of ["ENGINE.CANNOT_CONNECT", "unknown", ""]) {
      const t = { seenNonOffline: false };
      observeStatus(t, pseudo, [ENGINE.ROLLING]);
      expect(t.seenNonOffline).toBe(false);
      expect(() => observeStatus(t, ENGINE.OFFLINE, [ENGINE.ROLLING])).not.toThrow();
    }
    const t = { seenNonOffline: false };
    observeStatus(t, ENGINE.BOOTING, [ENGINE.ROLLING]);
    expect(t.seenNonOffline).toBe(true);
    expect(() => observeStatus(t, ENGINE.OFFLINE, [ENGINE.ROLLING])).toThrow(SwarmServerOfflineError);
  });

  it("OFFLINE is no failure when it is awaited, nor before the engine was seen up", () => {
    const up = { seenNonOffline: true };
    expect(() => observeStatus(up, ENGINE.OFFLINE, [ENGINE.OFFLINE])).not.toThrow();
    const never = { seenNonOffline: false };
    observeStatus(never, ENGINE.OFFLINE, [ENGINE.ROLLING]);
    expect(never.seenNonOffline).toBe(false);
  });
});

describe("watchEngineStatus", () => {
  it("polls at once, then every 5 s until an awaited status, which it returns", async () => {
    const w = deps([snap(ENGINE.BOOTING), snap(ENGINE.BOOTING), snap(ENGINE.ROLLING, 4)]);
    expect(await watchEngineStatus(w.d, [ENGINE.ROLLING])).toEqual(snap(ENGINE.ROLLING, 4));
    expect(w.polls()).toBe(3);
    expect(w.clock.state.sleeps).toEqual([5_000, 5_000]);
  });

  it("a status the caller just saw (not awaited) is not polled again at once; one that is awaited is", async () => {
    const a = deps([snap(ENGINE.ROLLING)]);
    await watchEngineStatus(a.d, [ENGINE.ROLLING], { justObserved: ENGINE.WEIGHT_SYNCING });
    expect(a.clock.state.sleeps).toEqual([5_000]);
    const b = deps([snap(ENGINE.ROLLING)]);
    await watchEngineStatus(b.d, [ENGINE.ROLLING], { justObserved: ENGINE.ROLLING });
    expect(b.clock.state.sleeps).toEqual([]);
  });

  it("each poll's timeout is the status endpoint's, capped by the time left (the last millisecond gets a 1 ms poll)", async () => {
    const w = deps([snap(ENGINE.BOOTING)], 30_000);
    const err = await watchEngineStatus(w.d, [ENGINE.ROLLING], { deadlineMs: 12_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwarmDeadlineError);
    expect(w.timeouts).toEqual([12_000, 7_000, 2_000]);
    const last = deps([snap(ENGINE.BOOTING)], 30_000);
    last.clock.advance(11_999);
    await watchEngineStatus(last.d, [ENGINE.ROLLING], { deadlineMs: 12_000 }).catch(() => undefined);
    expect(last.timeouts[0]).toBe(1);
  });

  it("OFFLINE after a non-OFFLINE poll ends the watch; a tracker from the caller carries what it saw", async () => {
    const a = deps([snap(ENGINE.BOOTING), snap(ENGINE.OFFLINE, null)]);
    await expect(watchEngineStatus(a.d, [ENGINE.ROLLING])).rejects.toBeInstanceOf(SwarmServerOfflineError);
    const b = deps([snap(ENGINE.OFFLINE, null)]);
    await expect(watchEngineStatus(b.d, [ENGINE.ROLLING], { tracker: { seenNonOffline: true } })).rejects.toBeInstanceOf(SwarmServerOfflineError);
    const c = deps([snap(ENGINE.OFFLINE, null), snap(ENGINE.ROLLING)]);
    expect((await watchEngineStatus(c.d, [ENGINE.ROLLING])).status).toBe(ENGINE.ROLLING);
  });

  it("a failed poll keeps the watch going (logged at debug), unless the fetch marked its error not retryable", async () => {
    const down = new SwarmConnectionError("getEngineStatus", "GET /get_engine_status failed: fetch failed", new TypeError("fetch failed"));
    const a = deps([cannot(down), snap(ENGINE.ROLLING)]);
    expect((await watchEngineStatus(a.d, [ENGINE.ROLLING])).status).toBe(ENGINE.ROLLING);
    expect(a.log.lines).toContainEqual({ level: "debug", msg: "status poll failed while waiting for engine status [ENGINE.ROLLING]: GET /get_engine_status failed: fetch failed" });
    const budget = new SwarmConnectionError("getEngineStatus", "budget", { retryable: false });
    const b = deps([cannot(budget), snap(ENGINE.ROLLING)]);
    await expect(watchEngineStatus(b.d, [ENGINE.ROLLING])).rejects.toBe(budget);
    expect(b.polls()).toBe(1);
    // a logger without debug is fine
    const c = deps([cannot(down), snap(ENGINE.ROLLING)]);
    delete (c.d.logger as { debug?: unknown }).debug;
    expect((await watchEngineStatus(c.d, [ENGINE.ROLLING])).status).toBe(ENGINE.ROLLING);
  });

  it("an HTTP or protocol error of a poll (a gateway's page, a 400) keeps the watch going: only a connection error may end it", async () => {
    const page = new SwarmProtocolError("getEngineStatus", "GET /get_engine_status", "HTTP 200 body is not JSON: <html>", [], "<html>");
    const refusedPoll = new SwarmAPIError(400, "getEngineStatus", "GET /get_engine_status", "bad", { detail: "bad" });
    const w = deps([{ ...cannot(page as never), error: page } as Answer, { ...cannot(refusedPoll as never), error: refusedPoll } as Answer, snap(ENGINE.ROLLING)]);
    expect((await watchEngineStatus(w.d, [ENGINE.ROLLING])).status).toBe(ENGINE.ROLLING);
    expect(w.polls()).toBe(3);
  });

  it("logs a status once when it changes, and the deadline error names the last status seen", async () => {
    const w = deps([snap(ENGINE.BOOTING), snap(ENGINE.BOOTING), snap(ENGINE.WEIGHT_SYNCING), snap(ENGINE.WEIGHT_SYNCING)]);
    const err = (await watchEngineStatus(w.d, [ENGINE.ROLLING, ENGINE.ROLLING_POST], { deadlineMs: 20_000 }).catch((e: unknown) => e)) as SwarmDeadlineError;
    expect(w.log.lines.filter((l) => l.level === "info").map((l) => l.msg)).toEqual([
      "Engine status is ENGINE.BOOTING. waiting for engine status [ENGINE.ROLLING, ENGINE.ROLLING_POST]...",
      "Engine status is ENGINE.WEIGHT_SYNCING. waiting for engine status [ENGINE.ROLLING, ENGINE.ROLLING_POST]...",
    ]);
    expect(err.lastStatus).toBe(ENGINE.WEIGHT_SYNCING);
    expect(err.message).toBe("waiting for engine status [ENGINE.ROLLING, ENGINE.ROLLING_POST]: deadline reached (last engine status: ENGINE.WEIGHT_SYNCING)");
  });

  it("a status just seen by the caller is not logged again when the first poll repeats it", async () => {
    const w = deps([snap(ENGINE.WEIGHT_SYNCING), snap(ENGINE.ROLLING)]);
    await watchEngineStatus(w.d, [ENGINE.ROLLING], { justObserved: ENGINE.WEIGHT_SYNCING });
    expect(w.log.lines.filter((l) => l.level === "info")).toEqual([]);
  });
});
