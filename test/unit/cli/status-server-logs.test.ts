/**
 * `ajet-edge status RUN --server-logs` (issue 20 §4): under the status, each swarm server's verbose logs
 * (`GET /get_verbose_logs`, spec §3.19), read from this machine; a server it cannot reach gets one line saying so.
 */
import { describe, expect, it } from "vitest";
import { runStatusCommand } from "../../../src/cli/commands/status.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";

const NOW = 1_800_000_000_000;
const W = "http://127.0.0.1:8787";
const S = "http://127.0.0.1:10086";

const view = {
  runId: "run-a", function: "countdown", createdAtMs: NOW - 5_000, phase: "finished", stopReason: "maxSteps", episodeType: "train",
  engines: [{ swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2 }], globalStep: 2, currentWindow: null,
  episodes: { queued: 0, dispatched: 0, running: 0, reporting: 0, ended: 0, failed: 0, aborted: 0, dropped: 0, inFlight: 0 },
  steps: [], totals: { episodesEnded: 8, attemptsFailed: 0, groupsDropped: 0 }, failuresByCause: {}, log: [], waitingFor: null, failure: null, sources: [],
  swarms: [{ name: "default", url: S, engine: {} }, { name: "judge", url: "http://127.0.0.1:10999", engine: {} }],
};

function fetchFn(input: URL | string | Request): Promise<Response> {
  const url = String(input);
  if (url === `${W}/runs/run-a`) return Promise.resolve(Response.json(view));
  if (url === `${S}/get_verbose_logs`) return Promise.resolve(Response.json({ entries: [{ timestamp: NOW / 1000 - 3, tag: "rollout", message: "12/32 tasks complete" }] }));
  if (url.startsWith("http://127.0.0.1:10999")) return Promise.reject(new TypeError("fetch failed"));
  return Promise.resolve(Response.json({ error: { message: "no route" } }, { status: 404 }));
}

describe("ajet-edge status --server-logs", () => {
  it("prints each server's recent lines, and one line for a server this machine cannot reach", async () => {
    const io = { ...memoryIo(), now: () => NOW };
    expect(await runStatusCommand(["run-a", "--worker", W, "--server-logs"], io, { AJET_API_TOKEN: "t" }, fetchFn as typeof fetch)).toBe(0);
    const out = io.stdout.join("");
    expect(out).toContain(`server logs of default (${S}):\n  3 s ago [rollout] 12/32 tasks complete\n`);
    expect(out).toMatch(/server logs of judge \(http:\/\/127.0.0.1:10999\): not readable from this machine \(.+\)/);
  });
});
