/**
 * The Worker runs API client of `ajet-edge dev`: requests it sends, errors with the API's issues, malformed answers,
 * and `waitForRun` on a scripted API with an injected clock and sleep (no real time passes).
 */
import { describe, expect, it } from "vitest";
import { runsApi, RunsApiError, waitForRun, type RunsApi, type RunView } from "../../../src/cli/dev/runs-api.ts";

const view = (phase: RunView["phase"], over: Record<string, unknown> = {}) => ({
  runId: "run-1", phase, stopReason: null, episodeType: "train", engines: [], globalStep: 1, currentWindow: null,
  episodes: { inFlight: 0, ended: 0 }, steps: [], totals: { episodesEnded: 0 }, failuresByCause: {}, log: [], ...over,
});

function fakeFetch(answer: (url: string, init: RequestInit) => Response) {
  const calls: { url: string; method: string; body: unknown }[] = [];
  const fn = (async (input: string | URL | Request, init: RequestInit = {}) => {
    calls.push({ url: String(input), method: init.method ?? "GET", body: init.body ? JSON.parse(String(init.body)) : undefined });
    return answer(String(input), init);
  }) as typeof fetch;
  return { fn, calls };
}

describe("runs API client", () => {
  it("posts the spec to /runs and reads the created run; stop and report use their routes", async () => {
    const { fn, calls } = fakeFetch((url) => Response.json(url.endsWith("/report") ? { summary: { steps: [], totals: { episodesEnded: 0 } }, eval: null } : view("running"), { status: url.endsWith("/runs") ? 201 : 200 }));
    const api = runsApi("http://127.0.0.1:9", fn);
    expect((await api.create({ swarms: [{ url: "http://127.0.0.1:1" }], datasets: [{ name: "d" } as never], function: "countdown" })).runId).toBe("run-1");
    await api.get("run-1");
    await api.stop("run-1");
    await api.report("run-1");
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      "POST http://127.0.0.1:9/runs", "GET http://127.0.0.1:9/runs/run-1", "POST http://127.0.0.1:9/runs/run-1/stop", "GET http://127.0.0.1:9/runs/run-1/report",
    ]);
    expect(calls[0]!.body).toEqual({ swarms: [{ url: "http://127.0.0.1:1" }], datasets: [{ name: "d" }], function: "countdown" });
  });

  it("a 400 carries the API's issues", async () => {
    const issues = [{ path: "datasets.0.weight", message: "weight must be > 0" }];
    const { fn } = fakeFetch(() => Response.json({ error: { message: "invalid run spec", issues } }, { status: 400 }));
    const err = await runsApi("http://w", fn).create({ swarms: [], datasets: [], function: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunsApiError);
    expect(err).toMatchObject({ status: 400, issues, message: "POST /runs: HTTP 400: invalid run spec" });
  });

  it("refuses a body that is not JSON or not a run view", async () => {
    const text = fakeFetch(() => new Response("Internal Server Error", { status: 500 }));
    await expect(runsApi("http://w", text.fn).get("r")).rejects.toThrow("GET /runs/r: HTTP 500, not JSON: Internal Server Error");
    const shape = fakeFetch(() => Response.json({ runId: "r" }));
    await expect(runsApi("http://w", shape.fn).get("r")).rejects.toThrow(/^GET \/runs\/r: unexpected response \(phase: /);
  });
});

/** An API whose `get` answers from a script: a phase, or an Error to throw. */
function scripted(script: (RunView["phase"] | Error)[]): RunsApi & { gets: number } {
  const api = {
    gets: 0,
    async get() {
      const next = script[Math.min(api.gets++, script.length - 1)]!;
      if (next instanceof Error) throw next;
      return view(next) as unknown as RunView;
    },
    create: async () => { throw new Error("unused"); },
    stop: async () => { throw new Error("unused"); },
    report: async () => { throw new Error("unused"); },
    endedEpisodes: async () => { throw new Error("unused"); },
    metrics: async () => { throw new Error("unused"); },
    metricsText: async () => { throw new Error("unused"); },
    attempts: async () => { throw new Error("unused"); },
    transcript: async () => { throw new Error("unused"); },
    list: async () => { throw new Error("unused"); },
    inFlight: async () => { throw new Error("unused"); },
  };
  return api;
}

/** A clock that moves only when `sleep` is called. */
function fakeTime() {
  let t = 0;
  return { now: () => t, sleep: async (ms: number) => void (t += ms), get t() { return t; } };
}

describe("waitForRun", () => {
  it("polls until the run is finished and reports every status", async () => {
    const api = scripted(["running", "finishing", "finished"]);
    const time = fakeTime();
    const seen: string[] = [];
    const r = await waitForRun(api, "run-1", { timeoutMs: 10_000, pollMs: 400, onStatus: (s) => seen.push(s.phase), ...time });
    expect(r.outcome).toBe("finished");
    expect(seen).toEqual(["running", "finishing", "finished"]);
    expect(time.t).toBe(800);
  });

  it("times out at the deadline with the last status", async () => {
    const time = fakeTime();
    const r = await waitForRun(scripted(["running"]), "run-1", { timeoutMs: 1_000, pollMs: 400, ...time });
    expect(r.outcome).toBe("timeout");
    expect(r.status?.phase).toBe("running");
    expect(time.t).toBe(1_000);
  });

  it("returns aborted when the signal fires", async () => {
    const controller = new AbortController();
    const time = fakeTime();
    const r = await waitForRun(scripted(["running"]), "run-1", { timeoutMs: 10_000, signal: controller.signal, now: time.now, sleep: async () => controller.abort() });
    expect(r.outcome).toBe("aborted");
  });

  it("rides out a few network errors, gives up after maxConsecutiveErrors, and never retries an API error", async () => {
    const net = new TypeError("fetch failed");
    expect((await waitForRun(scripted([net, net, "finished"]), "r", { timeoutMs: 10_000, ...fakeTime() })).outcome).toBe("finished");
    await expect(waitForRun(scripted([net]), "r", { timeoutMs: 10_000, maxConsecutiveErrors: 3, ...fakeTime() })).rejects.toThrow("fetch failed");
    const gone = scripted([new RunsApiError(404, "no run r", []), "finished"]);
    await expect(waitForRun(gone, "r", { timeoutMs: 10_000, ...fakeTime() })).rejects.toThrow("no run r");
    expect(gone.gets).toBe(1);
  });
});
