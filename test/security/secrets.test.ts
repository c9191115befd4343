/**
 * The operator's secrets cannot be redirected (edge/ground/secrets.ts, runtime/outbound.ts): the demonstrated theft —
 * a run that sets only JUDGE_BASE_URL to its own host to receive the operator's JUDGE_API_KEY — replayed at the
 * API and at fetch time; shadowing any operator key; run secrets never in any answer and gone from the Durable
 * Object's storage once the run ends.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createOpenAIJudge, JUDGE_SCORE_INSTRUCTION } from "../../src/rewards/judge.ts";
import { credentialBindings, outboundFetch, outboundPolicy, OutboundRefusedError } from "../../src/runtime/outbound.ts";
import { CaptureServer, countdownSpec, DEAD_SWARM, stubOf } from "../edge/support.ts";
import { bearer, callWorker } from "./_support.ts";

const OPERATOR_KEY = "sk-operator-judge-key-DO-NOT-LEAK-0001";
const operatorSecrets = (judgeHost: string) => JSON.stringify({ JUDGE_BASE_URL: `https://${judgeHost}/v1`, JUDGE_API_KEY: OPERATOR_KEY, JUDGE_MODEL: "judge-1" });
const causes = (err: unknown): unknown[] => {
  const out: unknown[] = [];
  for (let e = err; e != null && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
};
const post = (spec: unknown, overrides: Record<string, string | undefined>) => callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify(spec) }, overrides);

describe("the demonstrated key theft, replayed", () => {
  it("a run that sets only JUDGE_BASE_URL to a capture server → 400 naming secrets.JUDGE_BASE_URL; the capture server sees no request", async () => {
    const capture = await CaptureServer.start();
    const spec = countdownSpec(DEAD_SWARM, { secrets: { JUDGE_BASE_URL: `${capture.url}/v1` } });
    const res = await post(spec, { AJET_SECRETS: operatorSecrets("judge.example.com"), AJET_ALLOWED_HOSTS: `127.0.0.1,${capture.host}` });
    expect(res.status).toBe(400);
    expect(res.json.error.issues).toEqual([{ code: "invalid", path: "secrets.JUDGE_BASE_URL", message: expect.stringContaining("JUDGE_BASE_URL is set by the Worker's operator") }]);
    expect(res.text).not.toContain(OPERATOR_KEY);
    expect(await capture.received()).toEqual([]);
  });

  it("shadowing any operator key (here the key itself) → 400 naming it, never its value", async () => {
    const res = await post(countdownSpec(DEAD_SWARM, { secrets: { JUDGE_API_KEY: "mine", JUDGE_MODEL: "m" } }), { AJET_SECRETS: operatorSecrets("judge.example.com") });
    expect(res.status).toBe(400);
    expect(res.json.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(["secrets.JUDGE_API_KEY", "secrets.JUDGE_MODEL"]);
    expect(res.text).not.toContain(OPERATOR_KEY);
  });

  it("a run's own judge URL must be an allowed host too → 400 naming the host and AJET_ALLOWED_HOSTS", async () => {
    const res = await post(countdownSpec(DEAD_SWARM, { secrets: { JUDGE_BASE_URL: "https://evil.example.net/v1", JUDGE_API_KEY: "k", JUDGE_MODEL: "m" } }), {});
    expect(res.status).toBe(400);
    expect(res.json.error.issues[0]).toMatchObject({ path: "secrets.JUDGE_BASE_URL", message: expect.stringContaining("evil.example.net is not an allowed host") });
  });

  it("at fetch time, the operator's key is only sent to the operator's judge host: a judge aimed elsewhere is refused before sending", async () => {
    const capture = await CaptureServer.start();
    // the operator set the key but pointed it at judge.example.com; the (allowed) capture host must not get it
    const policy = outboundPolicy(`127.0.0.1`, { JUDGE_BASE_URL: "https://judge.example.com/v1", JUDGE_API_KEY: OPERATOR_KEY });
    const judge = createOpenAIJudge({ baseUrl: `${capture.url}/v1`, apiKey: OPERATOR_KEY, model: "m", fetch: outboundFetch((i, init) => fetch(i, init), policy), maxAttempts: 1 });
    const err = await judge.grade({ rubric: JUDGE_SCORE_INSTRUCTION, input: "x" }).catch((e: unknown) => e);
    // the SDK wraps the refusal as a connection error; its cause says why (and retrying stops: retryable false)
    expect(causes(err).find((e) => e instanceof OutboundRefusedError)?.message).toMatch(/JUDGE_API_KEY may only be sent to judge\.example\.com/);
    // an operator credential with no endpoint configured is never sent anywhere
    const unbound = outboundPolicy(`127.0.0.1`, { GATEWAY_TOKEN: "gw-token-DO-NOT-LEAK-0002" });
    await expect(outboundFetch((i, init) => fetch(i, init), unbound)(capture.url, { headers: { "x-gateway-token": "gw-token-DO-NOT-LEAK-0002" } })).rejects.toThrow(/no endpoint is configured for it/);
    expect(await capture.received()).toEqual([]);
    expect(credentialBindings({ JUDGE_BASE_URL: "https://j.example.com/v1", JUDGE_API_KEY: OPERATOR_KEY, JUDGE_MODEL: "judge-model-name" }).map((b) => [b.name, b.host])).toEqual([["JUDGE_API_KEY", "j.example.com"]]);
  });
});

describe("run secrets at rest", () => {
  it("are never returned by any route, stored only encrypted, and their sealed copy and wrapped key deleted when the run ends (stopped)", async () => {
    const secret = "sk-run-secret-DO-NOT-LEAK-0003";
    const created = await post(countdownSpec(DEAD_SWARM, { secrets: { MY_API_KEY: secret } }), {});
    expect(created.status).toBe(201);
    const runId = created.json.runId as string;
    const dump = () =>
      runInDurableObject(stubOf(runId), (_i, state) => {
        const tables = state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'").toArray();
        return tables.map((t) => JSON.stringify(state.storage.sql.exec(`SELECT * FROM "${t.name}"`).toArray())).join("\n");
      });
    // while the run runs: only the sealed copy (edge/ground/secrets-at-rest), never the plaintext
    const running = await dump();
    expect(running).not.toContain(secret);
    expect(running).toContain('\\"sealedSecrets\\"');
    expect(running).toContain('\\"wrappedKey\\"');
    const stopped = await callWorker(`/runs/${runId}/stop`, { method: "POST", headers: bearer() });
    expect(stopped.json.phase).toBe("finished");
    const answers = [created.text, stopped.text];
    for (const path of [`/runs/${runId}`, `/runs/${runId}/report`, `/runs/${runId}/episodes`]) answers.push((await callWorker(path, { headers: bearer() })).text);
    for (const text of answers) expect(text).not.toContain(secret);
    const ended = await dump();
    expect(ended).not.toContain(secret);
    expect(ended).not.toContain("sealedSecrets");
    expect(ended).not.toContain("wrappedKey");
  });

  it("a run with secrets on a Worker without AJET_SECRETS_KEY → 503 naming AJET_SECRETS_KEY and how to set it; a run without secrets still starts", async () => {
    const refused = await post(countdownSpec(DEAD_SWARM, { secrets: { MY_API_KEY: "sk-run-secret-DO-NOT-LEAK-0005" } }), { AJET_SECRETS_KEY: undefined });
    expect(refused.status).toBe(503);
    expect(refused.json.error.issues).toEqual([{ code: "unconfigured", path: "AJET_SECRETS_KEY", message: expect.stringContaining("npx wrangler secret put AJET_SECRETS_KEY") }]);
    expect(refused.text).not.toContain("sk-run-secret-DO-NOT-LEAK-0005");
    const short = await post(countdownSpec(DEAD_SWARM, { secrets: { MY_API_KEY: "x" } }), { AJET_SECRETS_KEY: "too-short" });
    expect(short.status).toBe(503);
    expect(short.json.error.issues[0].message).toContain("shorter than 32 characters");
    const plain = await post(countdownSpec(DEAD_SWARM), { AJET_SECRETS_KEY: undefined });
    expect(plain.status).toBe(201);
    await callWorker(`/runs/${plain.json.runId}/stop`, { method: "POST", headers: bearer() });
  });

  it("a run created under a quota releases its slot when it ends, so the token can create the next one", async () => {
    const vars = { AJET_MAX_RUNS_IN_FLIGHT: "1", AJET_API_TOKEN: "another-token-for-a-fresh-quota-0004" };
    const headers = bearer(vars.AJET_API_TOKEN);
    const first = await callWorker("/runs", { method: "POST", headers, body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, vars);
    expect(first.status).toBe(201);
    const second = await callWorker("/runs", { method: "POST", headers, body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, vars);
    expect(second.status).toBe(429);
    expect(second.json.error.issues[0].message).toContain("AJET_MAX_RUNS_IN_FLIGHT = 1");
    expect(second.json.error.issues[0].message).toContain("POST /runs/:id/stop");
    await callWorker(`/runs/${first.json.runId}/stop`, { method: "POST", headers }, vars);
    const third = await callWorker("/runs", { method: "POST", headers, body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, vars);
    expect(third.status).toBe(201);
    await callWorker(`/runs/${third.json.runId}/stop`, { method: "POST", headers }, vars);
    expect(env.AJET_API_TOKEN).not.toBe(vars.AJET_API_TOKEN);
  });
});
