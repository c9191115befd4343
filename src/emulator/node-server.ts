/**
 * @module emulator/node-server — `startEmulator`: the emulator on a real socket (@hono/node-server), 127.0.0.1
 * by default, port 0 for a random free port.
 */
import type { AddressInfo, Socket } from "node:net";
import { serve } from "@hono/node-server";
import { createEmulator, type Emulator, type EmulatorOptions } from "./emulator.ts";
import { DROP_HEADER } from "./hooks.ts";

/** Options of {@link startEmulator}: the emulator's options plus where to listen. */
export interface StartEmulatorOptions extends EmulatorOptions {
  /** TCP port; 0 picks a free one. Default 10086 (the real server's default). */
  port?: number;
  /** Interface to bind. Default 127.0.0.1. */
  host?: string;
}

/** A running emulator. `url` is `http://<host>:<port>` (no trailing slash). */
export interface RunningEmulator {
  url: string;
  port: number;
  emulator: Emulator;
  /** Stops the timers and closes the socket (open connections are closed too). */
  close(): Promise<void>;
}

/**
 * Starts the emulator on a socket and sets the registered `openai_base_url` to `<url>/v1`.
 * @throws Error when the port is taken or an option is invalid (the CLI reads `--answer-key` files itself,
 * `readAnswerKey`, and passes the rows as `answerKey`).
 */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  const { port = 10086, host = "127.0.0.1", ...emulatorOptions } = options;
  const emulator = createEmulator(emulatorOptions);
  // a fault that drops the connection (hooks.ts DROP_HEADER): the socket is destroyed instead of answered
  const dropping = async (req: Request, env?: unknown): Promise<Response> => {
    const res = await emulator.app.fetch(req, env);
    if (res.headers.has(DROP_HEADER)) (env as NodeBindings)?.incoming?.socket?.destroy();
    return res;
  };
  const fetch = emulator.config.manners.resetAfter500 ? resetAfter500(dropping) : dropping;
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch, port, hostname: host }, () => resolve(s));
    s.once("error", reject);
  });
  const address = server.address() as AddressInfo;
  // A wildcard bind is reachable on loopback; advertise that (the real engine advertises its node IP).
  const advertised = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const url = `http://${advertised.includes(":") ? `[${advertised}]` : advertised}:${address.port}`;
  emulator.setPublicBaseUrl(`${url}/v1`);
  return {
    url,
    port: address.port,
    emulator,
    close: () =>
      new Promise<void>((resolve, reject) => {
        emulator.close();
        server.close((err) => (err ? reject(err) : resolve()));
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/** What @hono/node-server passes as the second argument of `fetch`: the Node request and response. */
type NodeBindings = { incoming?: { socket?: Socket } } | undefined;

/**
 * uvicorn's manner (`manners.resetAfter500`): once a connection has answered a 500 it is done; the next request
 * that arrives on it is reset (TCP RST, no answer), so a client that reuses the connection sees a connection
 * reset and must retry on a fresh one.
 */
function resetAfter500(fetch: (req: Request, env?: unknown) => Response | Promise<Response>) {
  const spent = new WeakSet<Socket>();
  return async (req: Request, env?: unknown): Promise<Response> => {
    const socket = (env as NodeBindings)?.incoming?.socket;
    if (socket && spent.has(socket)) {
      socket.resetAndDestroy();
      return new Response(null, { status: 500 }); // never written: the socket is gone
    }
    const res = await fetch(req, env);
    if (res.status === 500 && socket) spent.add(socket);
    return res;
  };
}
