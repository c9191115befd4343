/**
 * The Node side of the security work: the emulator's simulated access gateway (`--require-header NAME=VALUE` and
 * the in-process `requireHeaders` option: 401 without it, on the swarm API and the LLM proxy alike), the runs API
 * client sending its token (explicit, or `AJET_API_TOKEN`), and the parsing rules of `AJET_ALLOWED_HOSTS` and
 * operator credential bindings.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseEmulatorArgs, parseRequireHeaders, runEmulatorCommand } from "../../../src/cli/commands/emulator.ts";
import { runsApi } from "../../../src/cli/dev/runs-api.ts";
import { createEmulator, startEmulator } from "../../../src/emulator/index.ts";
import { checkUrl, credentialBindings, outboundPolicy } from "../../../src/runtime/outbound.ts";

describe("the emulator's simulated gateway", () => {
  it("refuses every route without the header (401 JSON naming it), a wrong value too; serves with it", async () => {
    const emu = createEmulator({ profile: "fast", requireHeaders: { "X-Gateway-Token": "gw-1234" } });
    try {
      for (const path of ["/health", "/get_engine_status", "/v1/chat/completions"]) {
        const missing = await emu.app.fetch(new Request(`http://emu${path}`, { method: path.startsWith("/v1") ? "POST" : "GET" }));
        expect(missing.status, path).toBe(401);
        expect(await missing.json()).toEqual({ detail: "gateway: missing header x-gateway-token" });
      }
      const wrong = await emu.app.fetch(new Request("http://emu/health", { headers: { "x-gateway-token": "nope" } }));
      expect(await wrong.json()).toEqual({ detail: "gateway: wrong value of header x-gateway-token" });
      const ok = await emu.app.fetch(new Request("http://emu/health", { headers: { "x-gateway-token": "gw-1234" } }));
      expect(ok.status).toBe(200);
    } finally {
      emu.close();
    }
  });

  it("--require-header NAME=VALUE is repeatable, reaches the server, and a bad value is a usage error", async () => {
    expect(parseEmulatorArgs(["--require-header", "CF-Access-Client-Id=a=b", "--require-header", "X-T=1"])?.requireHeaders).toEqual({ "CF-Access-Client-Id": "a=b", "X-T": "1" });
    expect(() => parseRequireHeaders(["novalue"])).toThrow("--require-header must be NAME=VALUE");
    expect(() => parseRequireHeaders(["X-T="])).toThrow("--require-header must be NAME=VALUE");
    const log: string[] = [];
    let status = 0;
    const code = await runEmulatorCommand(["--port", "0", "--profile", "fast", "--require-header", "X-T=secret-value"], {
      log: (l) => log.push(l),
      waitForStop: async (running) => {
        status = (await fetch(`${running.url}/health`)).status;
        return 0;
      },
    });
    expect(code).toBe(0);
    expect(status).toBe(401);
    expect(log[0]).toContain("requires header X-T");
    expect(log.join("\n")).not.toContain("secret-value");
  });

  it("startEmulator passes requireHeaders through", async () => {
    const running = await startEmulator({ port: 0, profile: "fast", requireHeaders: { "x-a": "1" } });
    try {
      expect((await fetch(`${running.url}/health`)).status).toBe(401);
      expect((await fetch(`${running.url}/health`, { headers: { "x-a": "1" } })).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});

describe("the runs API client's token", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("sends Authorization: Bearer with the given token, else AJET_API_TOKEN, else none", async () => {
    const seen: Array<string | null> = [];
    const fn = (async (_input: string | URL | Request, init: RequestInit = {}) => {
      seen.push(new Headers(init.headers).get("authorization"));
      return Response.json({ error: { message: "no", issues: [] } }, { status: 404 });
    }) as typeof fetch;
    await runsApi("http://w", fn, { token: "tok-explicit" }).get("r").catch(() => undefined);
    vi.stubEnv("AJET_API_TOKEN", "tok-from-env");
    await runsApi("http://w", fn).get("r").catch(() => undefined);
    vi.stubEnv("AJET_API_TOKEN", "");
    await runsApi("http://w", fn).get("r").catch(() => undefined);
    expect(seen).toEqual(["Bearer tok-explicit", "Bearer tok-from-env", null]);
  });
});

describe("allowed hosts and credential bindings", () => {
  it("the operator's own …_URL endpoints are allowed; its credentials bind to the longest matching prefix", () => {
    const policy = outboundPolicy("", { JUDGE_BASE_URL: "https://judge.example.com/v1", JUDGE_API_KEY: "k".repeat(20), GPU_GATEWAY_URL: "https://gpu.example.com", GPU_GATEWAY_TOKEN: "t".repeat(20), GPU_TOKEN: "u".repeat(20) });
    expect(checkUrl("https://judge.example.com/v1/chat/completions", policy.allowed)).toBeNull();
    expect(checkUrl("https://judge.example.com:8443/v1", policy.allowed)?.host).toBe("judge.example.com:8443");
    expect(policy.bindings.map((b) => [b.name, b.host])).toEqual([["JUDGE_API_KEY", "judge.example.com"], ["GPU_GATEWAY_TOKEN", "gpu.example.com"], ["GPU_TOKEN", null]]);
    expect(credentialBindings({ JUDGE_MODEL: "a-long-model-name" })).toEqual([]);
  });
});
