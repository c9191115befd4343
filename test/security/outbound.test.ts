/**
 * Where the Worker may connect (runtime/outbound.ts, AJET_ALLOWED_HOSTS), attacked by naming hosts in a run:
 * a swarm or dataset host outside the list, loopback, private and link-local addresses on a deployed Worker (the
 * var unset), in every spelling the URL parser accepts, and redirects. Refused at run creation (400 naming the host
 * and the setting) AND at fetch time (the queue consumer, the Durable Object, dataset loads): a capture server on
 * 127.0.0.1 receives nothing.
 */
import { createMessageBatch, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { rolloutFunctions } from "../../functions/index.ts";
import type { Env } from "../../src/edge/ground/env.ts";
import { handleEpisodeBatch } from "../../src/edge/consumer/episode-consumer.ts";
import { SwarmServer } from "../../src/edge/swarm-server/swarm-server.ts";
import { checkUrl, isNonPublicHost, outboundFetch, parseAllowedHosts, OutboundRefusedError } from "../../src/runtime/outbound.ts";
import type { EpisodeMessage } from "../../src/port/index.ts";
import { CaptureServer, countdownSpec, } from "../edge/support.ts";
import { bearer, callWorker } from "./_support.ts";

const post = (spec: unknown, overrides: Record<string, string | undefined>) => callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify(spec) }, overrides);
const paths = (json: any): string[] => (json?.error?.issues ?? []).map((i: { path: string }) => i.path);

describe("run creation", () => {
  it("a swarm host outside AJET_ALLOWED_HOSTS → 400 naming the host and the setting; the server is never contacted", async () => {
    const capture = await CaptureServer.start();
    const res = await post(countdownSpec(capture.url), { AJET_ALLOWED_HOSTS: "gpu.example.com" });
    expect(res.status).toBe(400);
    const issue = res.json.error.issues.find((i: { path: string }) => i.path === "swarms.0.url");
    expect(issue.message).toContain(capture.host);
    expect(issue.message).toContain("AJET_ALLOWED_HOSTS");
    expect(await capture.received()).toEqual([]);
  });

  it("a dataset URL outside the list → 400 naming datasets.0.url; nothing is fetched", async () => {
    const capture = await CaptureServer.start();
    const spec = { ...countdownSpec("https://gpu.example.com"), datasets: [{ name: "cd", kind: "countdown", url: `${capture.url}/tasks.jsonl` }] };
    const res = await post(spec, { AJET_ALLOWED_HOSTS: "gpu.example.com" });
    expect(res.status).toBe(400);
    expect(paths(res.json)).toEqual(["datasets.0.url"]);
    expect(res.json.error.issues[0].message).toContain(`${capture.host} is a loopback, private or link-local address`);
    expect(await capture.received()).toEqual([]);
  });

  it("a deployed Worker without AJET_ALLOWED_HOSTS allows no host at all, loopback and metadata addresses included", async () => {
    const hosts = [
      "http://127.0.0.1:10086", "http://localhost:10086", "http://[::1]:10086", "http://169.254.169.254", "http://10.0.0.5:10086",
      "http://192.168.1.10", "http://172.16.0.1", "http://0.0.0.0:10086", "http://2130706433", "http://127.1", "http://0x7f.0.0.1",
      "http://[::ffff:127.0.0.1]", "http://[fe80::1]", "http://[fd00::1]", "http://gpu.localhost", "https://gpu.example.com",
    ];
    for (const url of hosts) {
      const res = await post(countdownSpec(url), { AJET_ALLOWED_HOSTS: undefined });
      expect(res.status, url).toBe(400);
      expect(paths(res.json), url).toContain("swarms.0.url");
      expect(res.json.error.issues.find((i: { path: string }) => i.path === "swarms.0.url").message, url).toContain("no outbound host is allowed yet");
    }
  });

  it("loopback is allowed only when listed exactly: a wildcard never matches an address, a port entry only its port", async () => {
    const { allowed } = parseAllowedHosts("*.example.com,127.0.0.1:10086");
    expect(checkUrl("http://127.0.0.1:10086/x", allowed)).toBeNull();
    expect(checkUrl("http://127.0.0.1:10087/x", allowed)?.host).toBe("127.0.0.1:10087");
    expect(checkUrl("https://gpu.example.com", allowed)).toBeNull();
    expect(checkUrl("https://example.com.evil.net", allowed)?.host).toBe("example.com.evil.net");
    expect(checkUrl("http://user:pw@gpu.example.com", allowed)?.message).toContain("credentials in it");
    expect(checkUrl("file:///etc/passwd", allowed)?.message).toContain("file: URLs are not allowed");
    for (const h of ["127.0.0.1", "::1", "[::1]", "169.254.1.1", "100.64.0.1", "::ffff:7f00:1", "fc00::1", "localhost"]) expect(isNonPublicHost(h), h).toBe(true);
    for (const h of ["8.8.8.8", "gpu.example.com", "2606:4700::1111"]) expect(isNonPublicHost(h), h).toBe(false);
    expect(parseAllowedHosts("*,https://x.com/path, ok.com").problems).toHaveLength(2);
  });
});

describe("fetch time (defence in depth)", () => {
  it("outboundFetch refuses a host outside the list before sending, and does not follow a redirect to one", async () => {
    const target = await CaptureServer.start();
    const redirector = await CaptureServer.start(`${target.url}/stolen`);
    const guarded = outboundFetch((i, init) => fetch(i, init), { allowed: parseAllowedHosts(redirector.host).allowed, bindings: [] });
    await expect(guarded(`${target.url}/direct`)).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(guarded(`${redirector.url}/start`)).rejects.toThrow(`${target.host} is a loopback, private or link-local address`);
    expect((await redirector.received()).map((r) => r.path)).toEqual(["/start"]);
    expect(await target.received()).toEqual([]);
  });

  it("the queue consumer never contacts a swarm outside the list, even when a message names it", async () => {
    const capture = await CaptureServer.start();
    const msg: EpisodeMessage = {
      v: 1, runId: "run-outbound-test", episodeKey: "cd/0/0#0", attempt: 1, dispatchId: 1, clientUuid: crypto.randomUUID(), functionName: "countdown",
      episodeType: "train", swarms: [{ name: "default", url: capture.url }], discardEpisodeTimeoutSeconds: 60, throttlePolicy: null, taskId: "cd:train:0",
      task: { task_id: "cd:train:0", main_query: "24 from 2 3 4", init_messages: [], env_type: "countdown", metadata: { target: 24, nums: [2, 3, 4] } },
      taskRef: { source: "cd", taskIndex: 0 }, leaseDeadlineAtMs: Date.now() + 60_000, model: "agentjet-policy",
    };
    const batch = createMessageBatch("ajet-episodes", [{ id: "m1", timestamp: new Date(), attempts: 1, body: msg }]);
    await handleEpisodeBatch(batch as MessageBatch<unknown>, { ...env, AJET_ALLOWED_HOSTS: "gpu.example.com" } as Env, rolloutFunctions);
    expect(await capture.received()).toEqual([]);
  });

  it("the swarm server's object (the run's status watcher and engine starter) never contacts a swarm outside the list", async () => {
    const capture = await CaptureServer.start();
    const stub = env.SWARM_SERVERS.get(env.SWARM_SERVERS.idFromName(`outbound-${crypto.randomUUID()}`));
    await runInDurableObject(stub, async (_own, state) => {
      const fresh = new SwarmServer(state, { ...env, AJET_ALLOWED_HOSTS: "gpu.example.com" });
      const obs = await fresh.subscribe({
        runId: "run-outbound", swarm: "default", url: capture.url, yaml: "ajet: {}\n", batchSize: 2, numRepeat: 2,
        start: "if-offline", stopWhenDone: false, bootTimeoutSeconds: 60,
      });
      expect(obs.note.kind).toBe("unreachable");
      expect(JSON.stringify(obs.note)).toContain("outbound request refused");
      await fresh.alarm();
    });
    expect(await capture.received()).toEqual([]);
  });
});
