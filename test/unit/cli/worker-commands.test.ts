/**
 * `ajet-edge runs` / `status` / `stop` against a fake Worker (a fetch function): the rows and blocks they print,
 * the token they send (`--token`, else `AJET_API_TOKEN`), and one line with the fix for a refused token, an
 * unknown run and an unreachable Worker.
 */
import { describe, expect, it } from "vitest";
import { runRunsCommand } from "../../../src/cli/commands/runs.ts";
import { runStatusCommand } from "../../../src/cli/commands/status.ts";
import { runStopCommand } from "../../../src/cli/commands/stop.ts";
import { memoryIo } from "../../../src/cli/dev/output.ts";

const NOW = 1_800_000_000_000;
const W = "http://127.0.0.1:8787";

const listing = (runId: string, over: Record<string, unknown> = {}) => ({
  runId, function: "countdown", phase: "running", stopReason: null, engineStatus: "ENGINE.ROLLING", globalStep: 3,
  lastStepMeanReward: 0.5, createdAtMs: NOW - 90_000, waitingFor: null, failure: null, ...over,
});

const view = (over: Record<string, unknown> = {}) => ({
  runId: "run-a", function: "countdown", createdAtMs: NOW - 5_000, phase: "running", stopReason: null, episodeType: "train",
  engines: [{ swarm: "default", engineStatus: "ENGINE.ROLLING", globalStep: 2 }], globalStep: 2,
  currentWindow: { windowIndex: 1, episodesEnded: 12, meanReward: 0.25, waitingForEngine: false },
  episodes: { queued: 4, dispatched: 2, running: 14, reporting: 0, ended: 44, failed: 1, aborted: 0, dropped: 0, inFlight: 16 },
  steps: [{ windowIndex: 0, globalStep: 1, episodesEnded: 32, meanReward: 0.5, wallTimeMs: 2100 }],
  totals: { episodesEnded: 44, attemptsFailed: 1, groupsDropped: 0 }, failuresByCause: { function_error: 1 }, log: [], waitingFor: "nothing to claim yet", failure: null,
  sources: [{ name: "countdown", weight: 1, taskCount: 48, epoch: 0, position: 16, exhausted: false, deferred: 0, tasksServed: 16, tasksTotal: 48 }],
  ...over,
});

/** A fake Worker: routes → [status, body]; records each request's method, URL and authorization header. */
function fakeWorker(routes: Record<string, [number, unknown] | (() => [number, unknown])>) {
  const calls: string[] = [];
  const fn = (async (input: URL | string | Request, init?: RequestInit) => {
    const url = String(input);
    const method = init?.method ?? "GET";
    calls.push(`${method} ${url} ${(init?.headers as Record<string, string> | undefined)?.["authorization"] ?? "-"}`);
    const key = `${method} ${url.replace(W, "")}`;
    const route = routes[key];
    if (!route) return new Response(JSON.stringify({ error: { message: `no route ${key}` } }), { status: 404 });
    const [status, body] = typeof route === "function" ? route() : route;
    return new Response(JSON.stringify(body), { status });
  }) as typeof fetch;
  return { fn, calls };
}

const ioAt = () => ({ ...memoryIo(), now: () => NOW });

describe("ajet-edge runs", () => {
  it("prints one row per run, newest first, with the token from AJET_API_TOKEN", async () => {
    const w = fakeWorker({ "GET /runs?limit=20": [200, { runs: [listing("run-b", { waitingFor: "engine booting", engineStatus: "ENGINE.BOOTING", globalStep: null, lastStepMeanReward: null }), listing("run-a", { phase: "finished", stopReason: "maxSteps" })], next: null }] });
    const io = ioAt();
    expect(await runRunsCommand(["--worker", W], io, { AJET_API_TOKEN: "tok-env" }, w.fn)).toBe(0);
    expect(w.calls).toEqual([`GET ${W}/runs?limit=20 Bearer tok-env`]);
    expect(io.stdout.join("").split("\n")).toEqual([
      "run    function   phase     engine   global step  last reward  created  note",
      "run-b  countdown  running   BOOTING            -            -   1m ago  waiting: engine booting",
      "run-a  countdown  finished  ROLLING            3        0.500   1m ago  stop: maxSteps",
      "",
    ]);
  });

  it("follows the pages up to --limit; --token wins over AJET_API_TOKEN", async () => {
    const w = fakeWorker({
      "GET /runs?limit=3": [200, { runs: [listing("r1"), listing("r2")], next: "c1" }],
      "GET /runs?limit=1&cursor=c1": [200, { runs: [listing("r3")], next: "c2" }],
    });
    const io = ioAt();
    expect(await runRunsCommand(["--worker", W, "--limit", "3", "--json", "--token", "tok-flag"], io, { AJET_API_TOKEN: "tok-env" }, w.fn)).toBe(0);
    expect((JSON.parse(io.stdout.join("")) as { runs: { runId: string }[] }).runs.map((r) => r.runId)).toEqual(["r1", "r2", "r3"]);
    expect(w.calls.every((c) => c.endsWith("Bearer tok-flag"))).toBe(true);
  });

  it("a refused token: the API's line and what to set, exit 2", async () => {
    const w = fakeWorker({ "GET /runs?limit=20": [401, { error: { message: "missing token: send Authorization: Bearer <AJET_API_TOKEN>" } }] });
    const io = ioAt();
    expect(await runRunsCommand(["--worker", W], io, {}, w.fn)).toBe(2);
    expect(io.stderr.join("")).toBe(
      "ajet-edge runs: GET /runs?limit=20: HTTP 401: missing token: send Authorization: Bearer <AJET_API_TOKEN>\n" +
        "  give the Worker's API token with --token TOKEN or the AJET_API_TOKEN environment variable (the Worker's AJET_API_TOKEN secret)\n",
    );
  });

  it("an unreachable Worker: one line, exit 1", async () => {
    const io = ioAt();
    const down = (async () => { throw Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }); }) as typeof fetch;
    expect(await runRunsCommand(["--worker", W], io, {}, down)).toBe(1);
    expect(io.stderr.join("")).toBe(`ajet-edge runs: cannot reach the Worker at ${W}: ECONNREFUSED; check the URL and that it runs\n`);
  });
});

describe("ajet-edge status", () => {
  it("counts what ended from the run's totals, not the live rows (a finished run showed `ended 0` after 40 ended)", async () => {
    const finished = view({
      phase: "finished", stopReason: "maxSteps", currentWindow: null, waitingFor: null,
      episodes: { queued: 0, dispatched: 0, running: 0, reporting: 0, ended: 0, failed: 0, aborted: 0, dropped: 0, inFlight: 0 },
      totals: { episodesEnded: 40, attemptsFailed: 3, groupsDropped: 1 },
    });
    const w = fakeWorker({ "GET /runs/run-a": [200, finished] });
    const io = ioAt();
    expect(await runStatusCommand(["run-a", "--worker", W], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(io.stdout.join("")).toContain("so far: 40 episodes ended, 3 attempts failed, 1 group dropped\n");
    expect(io.stdout.join("")).not.toMatch(/\bended\s*\n.*\b0\b/);
  });

  it("shows the phase, engines, what it waits for, the open step, episodes by state, sources and steps", async () => {
    const w = fakeWorker({ "GET /runs/run-a": [200, view()] });
    const io = ioAt();
    expect(await runStatusCommand(["run-a", "--worker", W], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(io.stdout.join("")).toBe([
      "run run-a  function countdown  phase running  created 5s ago",
      "engines: default ROLLING (global step 2)",
      "waiting for: nothing to claim yet",
      "open step 2: 12 episodes ended, mean reward 0.250",
      "",
      "episodes now:",
      "in flight  queued  dispatched  running  reporting",
      "       16       4           2       14          0",
      "so far: 44 episodes ended, 1 attempt failed, 0 groups dropped",
      "",
      "source     weight  tasks  served  epoch  done",
      "countdown       1     48   16/48      0  no",
      "",
      "step  global step  episodes  mean reward  wall time",
      "   1            1        32        0.500       2.1s",
      "",
      "failed attempts: function_error 1",
      "",
    ].join("\n"));
  });

  it("--watch refreshes until the run is finished (a plain stream gets a block per change)", async () => {
    const seq = [view(), view(), view({ phase: "finished", stopReason: "maxSteps", currentWindow: null, waitingFor: null })];
    let i = 0;
    const w = fakeWorker({ "GET /runs/run-a": () => [200, seq[Math.min(i++, seq.length - 1)]] });
    const io = ioAt();
    expect(await runStatusCommand(["run-a", "--worker", W, "--watch", "--interval", "0.2"], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(i).toBe(3);
    const blocks = io.stdout.join("").split(/^run run-a /m).filter(Boolean);
    expect(blocks).toHaveLength(2); // the unchanged second view printed nothing
    expect(blocks[1]).toContain("phase finished  stop reason maxSteps");
  });

  it("--watch lists the in-flight episodes, oldest first: age, time since the server saw LLM activity, LLM calls", async () => {
    const seq = [view(), view({ phase: "finished", stopReason: "maxSteps", currentWindow: null, waitingFor: null, episodes: { inFlight: 0, ended: 60 } })];
    let i = 0;
    const row = (n: number, over: Record<string, unknown> = {}) => ({
      episodeKey: `run-a:countdown:${n}:0`, taskId: `countdown:train:${n}@a1`, repeat: 0, attempt: 1, status: "running", swarms: ["default"],
      ageSeconds: 75 - n, sinceLastLlmActivity: "1.5s", llmCalls: 2, ...over,
    });
    const inFlight = [row(0), row(1, { status: "dispatched", swarms: [], sinceLastLlmActivity: null, llmCalls: null }), ...Array.from({ length: 21 }, (_, k) => row(k + 2))];
    const w = fakeWorker({
      "GET /runs/run-a": () => [200, seq[Math.min(i++, seq.length - 1)]],
      "GET /runs/run-a/dashboard": [200, { inFlight }],
    });
    const io = ioAt();
    expect(await runStatusCommand(["run-a", "--worker", W, "--watch", "--interval", "0.2"], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    const [first, last] = io.stdout.join("").split(/^run run-a /m).filter(Boolean);
    const table = first!.slice(first!.indexOf("in flight:\n") + "in flight:\n".length).trimEnd().split("\n");
    expect(table[0]).toMatch(/^episode\s+task\s+repeat\s+attempt\s+state\s+swarms\s+age\s+since LLM\s+LLM calls$/);
    expect(table[1]).toMatch(/^run-a:countdown:0:0\s+countdown:train:0@a1\s+0\s+1\s+running\s+default\s+1m\s+1\.5s\s+2$/);
    expect(table[2]).toMatch(/^run-a:countdown:1:0\s+countdown:train:1@a1\s+0\s+1\s+dispatched\s+-\s+1m\s+-\s+-$/);
    expect(table).toHaveLength(1 + 20 + 1);
    expect(table[21]).toBe("… and 3 more in flight");
    expect(last).not.toContain("in flight:"); // a finished run lists none
    expect(w.calls.filter((c) => c.includes("/dashboard"))).toHaveLength(1);
  });

  it("--watch against a Worker without the in-flight view still shows the counts", async () => {
    const seq = [view(), view({ phase: "finished", stopReason: "maxSteps" })];
    let i = 0;
    const w = fakeWorker({ "GET /runs/run-a": () => [200, seq[Math.min(i++, seq.length - 1)]] }); // /dashboard answers 404
    const io = ioAt();
    expect(await runStatusCommand(["run-a", "--worker", W, "--watch", "--interval", "0.2"], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(w.calls.filter((c) => c.includes("/dashboard"))).toHaveLength(1);
    expect(io.stdout.join("")).toContain("       16       4           2       14");
    expect(io.stdout.join("")).not.toContain("in flight:");
  });

  it("an unknown run: one line naming the runs command, exit 1", async () => {
    const w = fakeWorker({});
    const io = ioAt();
    expect(await runStatusCommand(["run-x", "--worker", W], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(1);
    expect(io.stderr.join("")).toBe(`ajet-edge status: no run run-x on ${W}; list the runs with \`ajet-edge runs --worker ${W}\`\n`);
  });
});

describe("ajet-edge stop", () => {
  it("asks the Worker to drain and waits until the run is finished", async () => {
    let gets = 0;
    const w = fakeWorker({
      "POST /runs/run-a/stop": [200, view({ phase: "draining" })],
      "GET /runs/run-a": () => [200, ++gets < 2 ? view({ phase: "draining" }) : view({ phase: "finished", stopReason: "stopRequested", episodes: { ...view().episodes, inFlight: 0 } })],
    });
    const io = ioAt();
    expect(await runStopCommand(["run-a", "--worker", W], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(io.stdout.join("")).toBe("stopping run run-a: draining 16 episodes in flight…\nrun run-a stopped (stop reason stopRequested; 44 episodes ended)\n");
    expect(w.calls[0]).toBe(`POST ${W}/runs/run-a/stop Bearer t`);
  });

  it("an already finished run says so, exit 0", async () => {
    const w = fakeWorker({ "POST /runs/run-a/stop": [200, view({ phase: "finished", stopReason: "maxSteps" })] });
    const io = ioAt();
    expect(await runStopCommand(["run-a", "--worker", W, "--no-wait"], io, { AJET_API_TOKEN: "t" }, w.fn)).toBe(0);
    expect(io.stdout.join("")).toBe("run run-a is already finished (stop reason maxSteps)\n");
  });

  it("needs the run id", async () => {
    await expect(runStopCommand(["--worker", W], ioAt(), {}, fakeWorker({}).fn)).rejects.toThrow("missing required argument 'run'");
  });
});
