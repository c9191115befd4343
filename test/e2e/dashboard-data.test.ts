/**
 * The dashboard's data routes on the real stack (emulator + the Worker in local workerd, R2 in miniflare): after a
 * 3-step Countdown run, `GET /runs/:id/metrics` (JSON and CSV) agrees with the run's own per-step means and counts,
 * `GET /runs/:id/episodes/:key` returns the episode's chat transcript (messages, reply, reward, no api key), and
 * the pages and bundled assets are served.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunView } from "../../src/cli/dev/runs-api.ts";
import { runToEnd, startRig, type E2eRig } from "./_support.ts";

describe("e2e: metrics export, transcripts and pages of a finished 3-step run", () => {
  let rig: E2eRig | undefined;
  let status: RunView;
  let base: string;
  // every route of the dashboard is behind the API token, like the runs API
  const fetch = (url: string, init: RequestInit = {}) =>
    globalThis.fetch(url, { ...init, headers: { authorization: `Bearer ${rig!.session.worker.token}`, ...(init.headers as Record<string, string> | undefined) } });
  beforeAll(async () => {
    rig = await startRig(["--steps", "3"]);
    status = await runToEnd(rig);
    base = `${rig.session.worker.url}/runs/${status.runId}`;
  });
  afterAll(async () => {
    await rig?.session.close();
  });

  it("GET /metrics (JSON) gives per-step reward means equal to the run's step means, and counts that add up", async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    const m = (await res.json()) as { groups: Array<{ window: number | null; source: string; swarm: string; ended: number; failed: number; attempts: number; rewardMean: number | null; rewardStd: number | null; successRate: number | null; durationMeanMs: number | null }> };
    const all = m.groups.filter((g) => g.source === "*" && g.swarm === "*");
    expect(all.map((g) => g.window)).toEqual([1, 2, 3]);
    all.forEach((g, i) => {
      const step = status.steps[i]!;
      expect(g.ended).toBe(step.episodesEnded);
      expect(g.rewardMean).toBeCloseTo(step.meanReward!, 10);
      expect(g.attempts).toBe(g.ended + g.failed);
      expect(g.rewardStd).toBeGreaterThanOrEqual(0);
      expect(g.successRate).toBeGreaterThanOrEqual(0);
      expect(g.durationMeanMs).toBeGreaterThan(0);
    });
  });

  it("GET /metrics?format=csv gives the same rows as CSV with a header", async () => {
    const res = await fetch(`${base}/metrics?format=csv`);
    expect(res.headers.get("content-type")).toContain("text/csv");
    const lines = (await res.text()).trim().split("\r\n");
    const header = lines[0]!.split(",");
    expect(header.slice(0, 4)).toEqual(["window", "global_step", "source", "swarm"]);
    const meanAt = header.indexOf("reward_mean");
    const rows = lines.slice(1).map((l) => l.split(","));
    expect(rows.map((r) => r[0])).toEqual(["1", "2", "3"]);
    rows.forEach((r, i) => expect(Number(r[meanAt])).toBeCloseTo(status.steps[i]!.meanReward!, 10));
    const byAccept = await fetch(`${base}/metrics`, { headers: { accept: "text/csv" } });
    expect(await byAccept.text()).toBe(lines.join("\r\n") + "\r\n");
  });

  it("GET /episodes/:key returns the episode's transcript: the prompt, the model's reply and the reward, never the api key", async () => {
    const { attempts } = (await (await fetch(`${base}/attempts?window=1`)).json()) as { attempts: Array<{ episodeKey: string; attempt: number; reward: number | null; kind: string }> };
    const ended = attempts.find((a) => a.kind === "ended")!;
    const res = await fetch(`${base}/episodes/${encodeURIComponent(ended.episodeKey)}`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const t = JSON.parse(text) as { episodeKey: string; attempt: number; reward: number; result: string; llm: Array<{ messages: Array<{ role: string; content: string }>; reply: { content: string } | null; status: number }>; outputs: Record<string, { reward: number }> };
    expect(t.episodeKey).toBe(ended.episodeKey);
    expect(t.attempt).toBe(ended.attempt);
    expect(t.result).toBe("ended");
    expect(t.reward).toBe(ended.reward);
    expect(t.llm.length).toBeGreaterThan(0);
    expect(t.llm[0]!.status).toBe(200);
    expect(t.llm[0]!.messages.some((m) => m.role === "user" && m.content.length > 0)).toBe(true);
    expect(typeof t.llm[0]!.reply?.content).toBe("string");
    expect(Object.values(t.outputs)[0]!.reward).toBe(ended.reward);
    expect(text).not.toMatch(/sk-ajet-/);
    const missing = await fetch(`${base}/episodes/${encodeURIComponent("nope/0/0#9")}`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain("no transcript");
  });

  it("serves the pages to a browser and the bundled uPlot, and JSON to API clients at the same path", async () => {
    const page = await fetch(base, { headers: { accept: "text/html" } });
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain(`data-run="${status.runId}"`);
    const api = await fetch(base);
    expect(((await api.json()) as { runId: string }).runId).toBe(status.runId);
    const uplot = await fetch(`${rig!.session.worker.url}/assets/uplot.js`);
    expect(await uplot.text()).toContain("uPlot");
    const home = await fetch(`${rig!.session.worker.url}/`, { headers: { accept: "text/html" } });
    expect(await home.text()).toContain('data-page="runs"');
    // without a token a browser is sent to the sign-in form, an API client gets a 401
    const anonymous = await globalThis.fetch(base, { headers: { accept: "text/html" }, redirect: "manual" });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe(`/login?next=${encodeURIComponent(`/runs/${status.runId}`)}`);
    expect((await globalThis.fetch(`${base}/metrics`)).status).toBe(401);
  });
});
