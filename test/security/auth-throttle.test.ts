/**
 * Token guessing (issue 18): failed sign-ins are counted per client address by the rate-limiting binding
 * `AUTH_FAILURES` (wrangler.toml: 20 per 60 s; local workerd runs it). Past the limit the address gets 429 with
 * Retry-After for every request that carries a credential — the right token included, so a guess during the lockout
 * tells nothing — while other addresses are untouched. Each test uses its own address (a count lives for 60 s in the pool's one workerd).
 */
import { describe, expect, it } from "vitest";
import { AUTH_LOCK_SECONDS } from "../../src/edge/api/auth-throttle.ts";
import { API_TOKEN, callWorker } from "./_support.ts";

const from = (ip: string, token: string) => ({ authorization: `Bearer ${token}`, "cf-connecting-ip": ip });

describe("failed sign-ins per address", () => {
  it("20 wrong tokens → 401; the next → 429 with Retry-After; then the right token too, until the period ends; another address is untouched", async () => {
    const ip = "198.51.100.1";
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await callWorker("/runs", { headers: from(ip, `wrong-token-guess-${i}`) })).status);
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses[20]).toBe(429);
    const right = await callWorker("/runs", { headers: from(ip, API_TOKEN) });
    expect(right.status).toBe(429);
    expect(right.headers.get("retry-after")).toBe(String(AUTH_LOCK_SECONDS));
    expect(right.json.error.issues[0]).toMatchObject({ code: "too_many_failures", path: "authorization", message: expect.stringContaining("wait 60 s") });
    const other = await callWorker("/runs", { headers: from("203.0.113.7", API_TOKEN) });
    expect(other.status).toBe(200);
  });

  it("requests without a credential are not counted (a browser's page loads, health checks)", async () => {
    const ip = "198.51.100.2";
    for (let i = 0; i < 30; i++) expect((await callWorker("/runs", { headers: { "cf-connecting-ip": ip } })).status).toBe(401);
    expect((await callWorker("/runs", { headers: from(ip, API_TOKEN) })).status).toBe(200);
  });

  it("a request without CF-Connecting-IP (local workerd) is never locked out", async () => {
    for (let i = 0; i < 25; i++) expect((await callWorker("/runs", { headers: { authorization: `Bearer wrong-${i}-local-guess` } })).status).toBe(401);
    expect((await callWorker("/runs", { headers: { authorization: `Bearer ${API_TOKEN}` } })).status).toBe(200);
  });
});
