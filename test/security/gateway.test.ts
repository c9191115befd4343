/**
 * Swarm servers behind an access gateway (protocol/gateway-headers.ts): the emulator refuses every request
 * without the gateway's headers (401, `requireHeaders`); a run whose swarm names them from its secrets trains to
 * the end — swarm API and per-episode LLM calls alike carry them — and no console line of the whole run, nor its
 * log, holds a secret value or an episode's `sk-ajet-` key.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/edge/run/run-views.ts";
import { countdownSpec, createRun, postRun, TestEmulator, untilFinished } from "../edge/support.ts";
import { bearer, callWorker, consoleLines } from "./_support.ts";

const CF_ID = "cf-access-id-DO-NOT-LEAK-0005.access";
const CF_SECRET = "cf-access-secret-DO-NOT-LEAK-0006";
const gateway = { "cf-access-client-id": CF_ID, "cf-access-client-secret": CF_SECRET };
const templates = { "CF-Access-Client-Id": "{secret:CF_ID}", "CF-Access-Client-Secret": "{secret:CF_SECRET}" };

describe("a swarm server behind a gateway", () => {
  it("headers from the run's secrets on every call (claims, ends, LLM proxy): 4 episodes end, no 401; no log line (faults included) holds a secret or an sk-ajet- key", async () => {
    const emu = await TestEmulator.start({ requireHeaders: gateway, policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 }, gateway);
    // failures that make the consumer and the scheduler log (an LLM call answered 500, an end that fails once)
    await emu.faults({ "/v1/chat/completions": [{ status: 500, body: { detail: "boom" } }], "/end_episode": [{ status: 500 }] });
    const spec = countdownSpec(emu.url, { maxSteps: 1, secrets: { CF_ID, CF_SECRET }, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } });
    const { result: view, lines } = await consoleLines(async () => {
      const { stub } = await createRun({ ...spec, swarms: [{ url: emu.url, headers: templates }] });
      return untilFinished(stub);
    });
    expect(view.phase, JSON.stringify({ log: view.log, req: (await emu.requests()).map((r) => `${r.path} ${r.status}`) })).toBe("finished");
    expect(view.stopReason).toBe("maxSteps");
    expect(view.totals.episodesEnded).toBe(4);
    const requests = await emu.requests();
    expect(requests.filter((r) => r.status === 401)).toEqual([]);
    expect(requests.filter((r) => r.path === "/v1/chat/completions").length).toBeGreaterThanOrEqual(4);
    expect(requests.filter((r) => r.path === "/end_episode" && r.status === 200)).toHaveLength(4);
    // every console line of the run, and the run's own log, are free of secret values and episode keys
    expect(lines.length).toBeGreaterThan(0); // the faults were logged: there is something to grep
    const logText = [...lines, JSON.stringify(view.log)];
    for (const line of logText) {
      expect(line).not.toContain(CF_ID);
      expect(line).not.toContain(CF_SECRET);
      expect(line).not.toContain("sk-ajet-");
    }
  });

  it("without the headers the gateway refuses every call: nothing is claimed, and the run's status says the swarm cannot be reached", async () => {
    const emu = await TestEmulator.start({ requireHeaders: gateway });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 }, gateway);
    const booted = (await emu.requests()).length;
    const { stub, runId } = await createRun(countdownSpec(emu.url, { maxSteps: 1 }));
    await runDurableObjectAlarm(stub);
    const requests = (await emu.requests()).slice(booted);
    const fromRun = requests.filter((r) => r.path === "/get_engine_status" || r.path === "/claim_episode");
    expect(fromRun.length).toBeGreaterThan(0);
    expect(fromRun.every((r) => r.status === 401)).toBe(true);
    const view = (await stub.status()) as unknown as RunView;
    expect(JSON.stringify(view.log)).toContain("cannot be reached");
    await callWorker(`/runs/${runId}/stop`, { method: "POST", headers: bearer() });
  });

  it("Authorization as a gateway header, a literal credential, or a secret nobody sets → 400 naming the header", async () => {
    const url = "http://127.0.0.1:9";
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ Authorization: "Bearer {secret:GW}" }, "swarms.0.headers.Authorization", "each episode's own LLM key"],
      [{ "X-Gateway-Token": "literal-token" }, "swarms.0.headers.X-Gateway-Token", "literal credentials are refused"],
      [{ "X-Gateway-Token": "{secret:NOBODY_SETS_THIS}" }, "swarms.0.headers.X-Gateway-Token", "neither the run's secrets nor the operator's AJET_SECRETS"],
    ];
    for (const [headers, path, words] of cases) {
      const { status, body } = await postRun({ ...countdownSpec(url, { secrets: { GW: "gw-value-0123456789" } }), swarms: [{ url, headers }] });
      expect(status, path).toBe(400);
      const issue = body.error.issues.find((i: { path: string }) => i.path === path);
      expect(issue?.message, JSON.stringify(body.error.issues)).toContain(words);
    }
  });
});

describe("per-episode keys in log lines", () => {
  it("a line that carries an sk-ajet- key anyway (an error message quoting a request) is written redacted", async () => {
    const { jsonLogger } = await import("../../src/edge/ground/log.ts");
    const key = "sk-ajet-eyJhZ2VudF9uYW1lIjogImEiLCAidGFyZ2V0X3RhZyI6ICJiIn0=";
    const { lines } = await consoleLines(async () => jsonLogger({ run: "r" }).warn(`call failed with Authorization: Bearer ${key}`, { error: `key ${key}` }));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(key);
    expect(lines[0]).toContain("sk-ajet-<redacted>");
  });
});
