/**
 * @module test/edge/global-setup — runs in Node before the `edge` project (vitest globalSetup): starts an emulator
 * *factory* on 127.0.0.1 and provides its URL as `emulatorFactoryUrl`. Tests inside workerd ask it for a fresh
 * emulator (`POST /emulators`), each on its own port, wrapped so the test can read what the swarm received and set
 * fault hooks over HTTP:
 *  - `GET  <emulator>/__test/requests` → every request `{ path, body, status }` in order;
 *  - `GET  <emulator>/__test/state`    → `{ status, globalStep, queue, records, finished, stepLog }`;
 *  - `POST <emulator>/__test/faults`   → `{ "/end_episode": [FaultAction, …] }`: one action per call, in order.
 * It also starts *capture servers* (`POST {url}/captures` with `{redirectTo?}` → `{ url }`): a socket on 127.0.0.1
 * that records every request it receives (`GET <capture>/__captured` → `[{method, path, headers, body}]`, not
 * itself recorded) and answers 200 `{}` — or 302 to `redirectTo` — so the security tests can show that nothing
 * reached it; with `{body}` it answers 200 with that text whatever the Range (a dataset host without Range support).
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { TestProject } from "vitest/node";
import { createEmulator, type EmulatorOptions, type FaultAction } from "../../src/emulator/index.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** `POST {url}/emulators` with EmulatorOptions JSON → `{ url }` of a fresh emulator (fast profile) */
    emulatorFactoryUrl: string;
  }
}

type Server = ReturnType<typeof serve>;

function listen(fetch: (req: Request) => Response | Promise<Response>): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => resolve({ server, url: `http://127.0.0.1:${info.port}` }));
    server.once("error", reject);
  });
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** One emulator on its own socket, wrapped with the `/__test/` routes. */
async function startWrapped(options: EmulatorOptions): Promise<{ url: string; server: Server; close(): void }> {
  const emu = createEmulator({ profile: "fast", ...options });
  const requests: Array<{ path: string; body: unknown; status?: number }> = [];
  const faults = new Map<string, FaultAction[]>();
  const next = (path: string) => faults.get(path)?.shift();
  emu.hooks.claimEpisode = () => next("/claim_episode");
  emu.hooks.endEpisode = () => next("/end_episode");
  emu.hooks.abortEpisode = () => next("/abort_episode");
  emu.hooks.chatCompletion = () => next("/v1/chat/completions");
  const { server, url } = await listen(async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/__test/requests") return json(requests);
    if (path === "/__test/state") {
      const e = emu.engine;
      return json({ status: e.status, globalStep: e.globalStep, queue: e.queue, records: [...e.records.values()], finished: [...e.finishedRecords.keys()], stepLog: emu.stepLog });
    }
    if (path === "/__test/faults") {
      for (const [route, actions] of Object.entries((await req.json()) as Record<string, FaultAction[]>)) faults.set(route, [...actions]);
      return json({ ok: true });
    }
    const text = req.method === "POST" ? await req.clone().text() : "";
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep the text */
    }
    const seen: { path: string; body: unknown; status?: number } = { path, body };
    requests.push(seen);
    const res = await emu.app.fetch(req);
    seen.status = res.status;
    return res;
  });
  emu.setPublicBaseUrl(`${url}/v1`);
  return { url, server, close: () => emu.close() };
}

/** A server that records whatever it receives (see the module doc); with `body`, it answers every request 200 with it, ignoring Range (a host without Range support). */
async function startCapture(options: { redirectTo?: string; body?: string }): Promise<{ url: string; server: Server; close(): void }> {
  const seen: Array<{ method: string; path: string; headers: Record<string, string>; body: string }> = [];
  const { server, url } = await listen(async (req) => {
    const u = new URL(req.url);
    if (u.pathname === "/__captured") return json(seen);
    seen.push({ method: req.method, path: u.pathname + u.search, headers: Object.fromEntries(req.headers), body: await req.text() });
    if (options.body !== undefined) return new Response(options.body, { status: 200, headers: { "content-type": "text/plain" } });
    return options.redirectTo ? new Response(null, { status: 302, headers: { location: options.redirectTo } }) : json({});
  });
  return { url, server, close: () => undefined };
}

/** vitest globalSetup: the factory lives for the whole edge run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const running: Array<{ server: Server; close(): void }> = [];
  const factory = await listen(async (req) => {
    if (req.method === "POST" && new URL(req.url).pathname === "/captures") {
      const started = await startCapture((await req.json()) as { redirectTo?: string; body?: string });
      running.push(started);
      return json({ url: started.url });
    }
    if (req.method !== "POST" || new URL(req.url).pathname !== "/emulators") return json({ error: "POST /emulators" }, 404);
    try {
      const options = (await req.json()) as EmulatorOptions;
      const started = await startWrapped(options);
      running.push(started);
      return json({ url: started.url });
    } catch (err) {
      return json({ error: String(err) }, 400);
    }
  });
  project.provide("emulatorFactoryUrl", factory.url);
  return async () => {
    for (const r of [...running, { server: factory.server, close: () => undefined }]) {
      r.close();
      (r.server as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => r.server.close(() => resolve()));
    }
  };
}
