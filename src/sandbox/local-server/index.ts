/**
 * @module sandbox/local-server — `startSandboxServer`: the local sandbox backend on 127.0.0.1 (by default any free
 * port), behind a random token. `ajet-edge dev` starts one beside the emulator when a run wants sandboxes;
 * `ajet-edge sandbox-server` serves one on its own. Node only.
 */
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { sandboxApp } from "./app.ts";
import { LocalSandboxes, type LocalSandboxesOptions } from "./sandboxes.ts";

export { defaultSandboxRoot, LocalSandboxes, LocalSandboxError, type LiveSandbox } from "./sandboxes.ts";

/** Options of {@link startSandboxServer}. */
export interface SandboxServerOptions extends LocalSandboxesOptions {
  /** TCP port; default 0 (any free port) */
  port?: number;
  /** interface to bind; default 127.0.0.1 (loopback only: the API runs commands) */
  host?: string;
  /** the API token; default 32 random bytes as hex */
  token?: string;
}

/** A running sandbox server. */
export interface RunningSandboxServer {
  /** `http://127.0.0.1:<port>` (no trailing slash) */
  url: string;
  port: number;
  token: string;
  sandboxes: LocalSandboxes;
  /** sandboxes of stopped servers this one reaped at its start */
  reaped: number;
  /** Destroys every sandbox, then closes the socket. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the server: reaps what stopped servers under the same root left, then listens.
 * @throws Error when the port is taken
 */
export async function startSandboxServer(options: SandboxServerOptions = {}): Promise<RunningSandboxServer> {
  const { port = 0, host = "127.0.0.1", token = randomBytes(32).toString("hex"), ...rest } = options;
  const { sandboxes, reaped } = LocalSandboxes.open(rest);
  const app = sandboxApp(sandboxes, token);
  let server: ReturnType<typeof serve>;
  try {
    server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const s = serve({ fetch: app.fetch, port, hostname: host }, () => resolve(s));
      s.once("error", reject);
    });
  } catch (err) {
    await sandboxes.close();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const url = `http://${shown.includes(":") ? `[${shown}]` : shown}:${address.port}`;
  let closing: Promise<void> | null = null;
  return {
    url,
    port: address.port,
    token,
    sandboxes,
    reaped,
    close: () =>
      (closing ??= (async () => {
        await sandboxes.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        });
      })()),
  };
}
