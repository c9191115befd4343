/**
 * code-agent end to end, the way `npm start -- --function code-agent --dataset …` runs it: the emulator (its
 * simulated policy writes Python programs), the local sandbox server and the Worker in local workerd, each in its own
 * process. Every episode's program runs in a sandbox of its own attempt; the run's ledger counts them; the rewards the
 * server accepted are the programs' printed answers scored against the gold; no sandbox is left once the run is over;
 * an episode's transcript lists its sandbox's commands with their exit codes and output. In headless Chromium (when
 * installed) the run page shows the same sandbox counts and the transcript dialog shows the sandbox's command.
 */
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { afterAll, expect, it } from "vitest";
import { listLocalSandboxes } from "../../src/sandbox/local-backend.ts";
import { describeShared, sharedPath } from "../support/shared.ts";
import { episodeBuffer, runToEnd, startRig, stepsByGlobalStep, type E2eRig } from "./_support.ts";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

describeShared("e2e: code-agent with the local sandbox server", () => {
  let rig: E2eRig | undefined;
  let seen: { runId: string; total: { created: number; alive: number; destroyed: number; failed: number }; episodeKey: string } | undefined;
  afterAll(async () => {
    await rig?.session.close();
  });

  it("runs each episode's program in its own sandbox, posts the scored rewards, and leaves no sandbox", async () => {
    rig = await startRig([
      "--dataset",
      sharedPath("data/gsm8k/test.jsonl"),
      "--function",
      "code-agent",
      "--limit",
      "8",
      "--num-repeat",
      "2",
      "--batch-size",
      "2",
      "--steps",
      "2",
    ]);
    const server = rig.session.sandboxServer;
    expect(server, "dev started the sandbox server for a function that declares sandbox: true").not.toBeNull();
    const status = await runToEnd(rig, 120_000);
    expect(status.stopReason).toBe("maxSteps");
    const serverSteps = stepsByGlobalStep(rig.emulator);
    const accepted = [...serverSteps.values()].flatMap((s) => s.episodes.filter((e) => !e.dropped));
    expect(accepted).toHaveLength(8);
    // the simulated policy gets some right and some wrong: rewards are the programs' answers, not a constant
    expect(new Set(accepted.map((e) => e.reward)).size).toBeGreaterThanOrEqual(1);
    for (const e of accepted) expect([0, 1]).toContain(e.reward);
    // one sandbox per attempt that reached its program, every one destroyed
    const deadline = Date.now() + 30_000;
    let view = await rig.api.get(status.runId);
    while (((view as { sandboxes?: { total: { alive: number } } }).sandboxes?.total.alive ?? 1) > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      view = await rig.api.get(status.runId);
    }
    const counts = (
      view as {
        sandboxes?: {
          total: { alive: number; created: number; destroyed: number; failed: number; seconds: number };
          byWindow: Record<string, { created: number; seconds: number }>;
        };
      }
    ).sandboxes;
    expect(counts?.total).toMatchObject({ alive: 0, failed: 0 });
    expect(counts!.total.created).toBeGreaterThanOrEqual(accepted.length - 1); // a "no code" reply makes none
    expect(counts!.total.destroyed).toBe(counts!.total.created);
    expect(counts!.total.seconds).toBeGreaterThan(0);
    expect(Object.keys(counts!.byWindow).sort()).toEqual(["0", "1"]);
    expect(await listLocalSandboxes({ url: server!.url, token: server!.token })).toEqual([]);
    expect((await episodeBuffer(rig.emulator)).filter((r) => r.episode_status === "claimed")).toEqual([]);
    // the transcript lists the sandbox's calls beside the LLM turns
    const base = `${rig.session.worker.url}/runs/${status.runId}`;
    const auth = { headers: { authorization: `Bearer ${rig.session.worker.token}` } };
    const { attempts } = (await (await fetch(`${base}/attempts?window=1`, auth)).json()) as { attempts: Array<{ episodeKey: string; kind: string }> };
    const transcripts = await Promise.all(
      attempts.filter((a) => a.kind === "ended").map(async (a) => (await fetch(`${base}/episodes/${encodeURIComponent(a.episodeKey)}`, auth)).json()),
    );
    const withCommand = (transcripts as Array<{ sandbox?: Array<{ op: string; input: string; exitCode?: number | null; stdout?: string }> }>).find((t) =>
      t.sandbox?.some((c) => c.op === "command"),
    );
    expect(withCommand?.sandbox?.map((c) => c.op)).toEqual(["create", "write", "command", "destroy"]);
    expect(withCommand?.sandbox?.[2]).toMatchObject({ input: "python3 solution.py", exitCode: expect.any(Number) });
    // the run's figures: each window's sandbox-seconds in the metrics export, as the run view counts them
    const metrics = (await (await fetch(`${base}/metrics`, auth)).json()) as {
      groups: Array<{ window: number | null; source: string; swarm: string; sandboxSeconds?: number }>;
    };
    const perWindow = metrics.groups.filter((g) => g.source === "*" && g.swarm === "*").map((g) => [g.window, g.sandboxSeconds]);
    expect(perWindow).toEqual([
      [1, counts!.byWindow["0"]!.seconds],
      [2, counts!.byWindow["1"]!.seconds],
    ]);
    seen = { runId: status.runId, total: counts!.total, episodeKey: (withCommand as { episodeKey: string }).episodeKey };
  }, 240_000);

  it.skipIf(!existsSync(CHROMIUM))(
    "the run page shows the run's sandbox counts, and a transcript its sandbox's command",
    async () => {
      expect(seen, "the run above finished").toBeDefined();
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
      try {
        const page = await browser.newPage();
        await page.goto(`${rig!.session.worker.url}/login`);
        await page.fill("#token", rig!.session.worker.token);
        await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.click("button[type=submit]")]);
        await page.goto(`${rig!.session.worker.url}/runs/${seen!.runId}`);
        await page.waitForSelector("#sandbox-section:not([hidden]) #sandboxes tbody tr.total");
        const cells = await page.$$eval("#sandboxes tbody tr.total td", (tds) => tds.map((td) => td.textContent));
        const t = seen!.total;
        expect(cells.slice(0, 5)).toEqual(["all", String(t.created), String(t.alive), String(t.destroyed), String(t.failed)]);
        // the page lists the run's newest 50 attempts: the first row of the key is its last attempt, as fetched above
        await page.click(`#episodes tr[data-episode="${seen!.episodeKey}"]`);
        await page.waitForSelector("#transcript-body .msg.sandbox", { timeout: 30_000 });
        const sandboxText = await page.$$eval("#transcript-body .msg.sandbox pre", (pres) => pres.map((p) => p.textContent ?? ""));
        expect(sandboxText.some((x) => x.startsWith("command python3 solution.py\nexit "))).toBe(true);
      } finally {
        await browser.close();
      }
    },
    120_000,
  );
});
