/**
 * Who may call the API (edge/api/auth.ts), attacked from outside: no token, a wrong or malformed one, the token in the
 * query string, the read-only token writing, a Worker deployed without a token, and what `/health` tells. Each
 * refusal is JSON naming the header, and nothing of the token or of a run leaks into the answer.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { constantTimeEqual, MIN_TOKEN_LENGTH } from "../../src/edge/api/auth.ts";
import { countdownSpec, DEAD_SWARM } from "../edge/support.ts";
import { API_TOKEN, bearer, callWorker, READ_TOKEN } from "./_support.ts";

const routes: Array<[string, string]> = [
  ["POST", "/runs"],
  ["GET", "/runs/run-x"],
  ["POST", "/runs/run-x/stop"],
  ["GET", "/runs/run-x/report"],
  ["GET", "/runs/run-x/episodes"],
  // the dashboard's pages (asked for without Accept: text/html) and data routes
  ["GET", "/"],
  ["GET", "/runs/run-x/metrics"],
  ["GET", "/runs/run-x/episodes/src%2F0%2F1%230"],
  ["GET", "/runs/run-x/attempts"],
  ["GET", "/runs/run-x/dashboard"],
  ["GET", "/runs/run-x/live"],
  ["GET", "/no-such-route"],
];

describe("no token", () => {
  it("every route but GET /health → 401 JSON naming the Authorization header (unknown routes too: no route list for strangers)", async () => {
    for (const [method, path] of routes) {
      const res = await SELF.fetch(`https://edge.test${path}`, { method, ...(method === "POST" ? { body: JSON.stringify(countdownSpec(DEAD_SWARM)) } : {}) });
      const body = (await res.json()) as { error: { message: string; issues: { path: string }[] } };
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
      expect(body.error.message).toContain("missing authorization header");
      expect(body.error.issues[0]!.path).toBe("authorization");
    }
  });

  it("a POST /runs without a token creates nothing: the same spec with the token is the first run of a fresh quota", async () => {
    const refused = await callWorker("/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, { AJET_MAX_RUNS_IN_FLIGHT: "1" });
    expect(refused.status).toBe(401);
    // with a quota of one run, a run created by the refused request would make this one a 429
    const created = await callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, { AJET_MAX_RUNS_IN_FLIGHT: "1" });
    expect(created.status).toBe(201);
    await callWorker(`/runs/${created.json.runId}/stop`, { method: "POST", headers: bearer() });
  });
});

describe("a wrong or malformed token", () => {
  it("a wrong bearer token → 401 'wrong token', and the answer does not echo it", async () => {
    const guess = `${API_TOKEN.slice(0, -1)}X`;
    const res = await callWorker("/runs/run-x", { headers: { authorization: `Bearer ${guess}` } });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toContain("wrong token in the authorization header");
    expect(res.text).not.toContain(guess);
    expect(res.text).not.toContain(API_TOKEN);
  });

  it("Basic credentials, a bare token or an empty Bearer → 401 'malformed'", async () => {
    for (const header of [`Basic ${btoa(`user:${API_TOKEN}`)}`, API_TOKEN, "Bearer", "Bearer  a b"]) {
      const res = await callWorker("/runs/run-x", { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.json.error.message, header).toContain("malformed authorization header");
    }
  });

  it("constant-time compare: equal only for the same string, whatever the lengths", async () => {
    expect(await constantTimeEqual(API_TOKEN, API_TOKEN)).toBe(true);
    expect(await constantTimeEqual(API_TOKEN, `${API_TOKEN}x`)).toBe(false);
    expect(await constantTimeEqual(API_TOKEN, API_TOKEN.slice(0, 4))).toBe(false);
    expect(await constantTimeEqual("", API_TOKEN)).toBe(false);
  });
});

describe("a token in the query string", () => {
  it("?token=, ?access_token=, ?api_key= → 400 even when the token is right (URLs are logged); with the header too", async () => {
    for (const name of ["token", "access_token", "api_key", "Authorization"]) {
      const res = await callWorker(`/runs/run-x?${name}=${API_TOKEN}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
      expect(res.status, name).toBe(400);
      expect(res.json.error.message, name).toContain("credential in the query string");
      expect(res.text, name).not.toContain(API_TOKEN);
    }
  });
});

describe("the read-only token", () => {
  it("reads (GET → 404 for an unknown run, so the token passed) but cannot create or stop: 403 naming AJET_READ_TOKEN", async () => {
    const read = await callWorker("/runs/run-x", { headers: bearer(READ_TOKEN) });
    expect(read.status).toBe(404);
    const create = await callWorker("/runs", { method: "POST", headers: bearer(READ_TOKEN), body: JSON.stringify(countdownSpec(DEAD_SWARM)) }, { AJET_MAX_RUNS_IN_FLIGHT: "1" });
    expect(create.status).toBe(403);
    expect(create.json.error.message).toContain("read-only token (AJET_READ_TOKEN)");
    const stop = await callWorker("/runs/run-x/stop", { method: "POST", headers: bearer(READ_TOKEN) });
    expect(stop.status).toBe(403);
    expect(create.text + stop.text).not.toContain(READ_TOKEN);
  });
});

describe("a Worker deployed without AJET_API_TOKEN", () => {
  it("fails closed: every route, /health included, answers 503 with one line saying how to set it", async () => {
    for (const [method, path] of [...routes, ["GET", "/health"] as [string, string]]) {
      const res = await callWorker(path, { method, headers: bearer() }, { AJET_API_TOKEN: undefined });
      expect(res.status, `${method} ${path}`).toBe(503);
      if (path !== "/health") expect(res.json.error.message).toContain("wrangler secret put AJET_API_TOKEN");
    }
  });

  it("a token shorter than the minimum counts as none (503), and the read token alone opens nothing", async () => {
    const short = "x".repeat(MIN_TOKEN_LENGTH - 1);
    const res = await callWorker("/runs/run-x", { headers: bearer(short) }, { AJET_API_TOKEN: short });
    expect(res.status).toBe(503);
    expect(res.json.error.message).toContain(`shorter than ${MIN_TOKEN_LENGTH}`);
    const readOnly = await callWorker("/runs/run-x", { headers: bearer(READ_TOKEN) }, { AJET_API_TOKEN: undefined });
    expect(readOnly.status).toBe(503);
  });
  it("the placeholder of .dev.vars.example (or another obvious stand-in) counts as none: 503 with one line, even for that very token", async () => {
    for (const placeholder of ["replace-with-a-long-random-token", "changeme-changeme-changeme", "<your-api-token-goes-here>"]) {
      const res = await callWorker("/runs/run-x", { headers: bearer(placeholder) }, { AJET_API_TOKEN: placeholder });
      expect(res.status, placeholder).toBe(503);
      expect(res.json.error.message, placeholder).toMatch(/^AJET_API_TOKEN is not a real token \(.+\): set a random one .* wrangler secret put AJET_API_TOKEN/);
      expect(res.json.error.message, placeholder).not.toContain(placeholder);
    }
    // a placeholder read token opens nothing, while the real write token still works
    const read = await callWorker("/runs/run-x", { headers: bearer("replace-with-another-long-random-token") }, { AJET_READ_TOKEN: "replace-with-another-long-random-token" });
    expect(read.status).toBe(401);
  });
});

describe("GET /health", () => {
  it("needs no token and tells nothing an attacker can use: {status: ok}, no function names, no version", async () => {
    const res = await SELF.fetch("https://edge.test/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(res.headers.get("server")).toBeNull();
    expect(res.headers.get("x-powered-by")).toBeNull();
  });
});
