/**
 * @module cli/dev/worker-host — the child process that hosts the Worker in local workerd (wrangler's
 * `unstable_startWorker`). `startLocalWorker` (worker.ts) spawns it DETACHED, in its own process group, so a
 * terminal Ctrl-C reaches only the CLI: workerd keeps running while the CLI drains the run, then the CLI asks
 * for `dispose`. IPC protocol: parent → child `{type:"start", vars}` first (the Worker's vars: the session's API
 * token and allowed hosts, never in argv or the environment); child → parent `{type:"ready", url, persistDir}` or
 * `{type:"error", message}`; parent → child `{type:"dispose"}`. The host also disposes when the IPC channel closes (the CLI died), so no
 * workerd outlives its CLI. The persist directory is the start message's `persistDir` (kept: `dev --persist`), else
 * a fresh temp dir, deleted at dispose. The parent sets the wrangler environment (`WRANGLER_QUIET_ENV` in
 * worker.ts) and `AJET_EDGE_DISPATCH` (the Worker's `AJET_DISPATCH`).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DISPATCH_ENV, type HostMessage, type ParentMessage } from "./worker-ipc.ts";

function send(message: HostMessage): void {
  if (process.connected) process.send?.(message);
}

async function main(): Promise<void> {
  const configPath = process.argv[2];
  if (!configPath || !process.send) {
    console.error("worker-host: run by `ajet-edge dev` only (needs the wrangler.toml path and an IPC channel)");
    process.exit(2);
  }
  let persistDir = "";
  let keep = false;
  let worker: { dispose(): Promise<void> } | null = null;
  let closing = false;
  const shutdown = async (code: number) => {
    if (closing) return;
    closing = true;
    try {
      await worker?.dispose();
    } finally {
      if (persistDir && !keep) rmSync(persistDir, { recursive: true, force: true });
      process.exit(code);
    }
  };
  let onStart: (msg: Extract<ParentMessage, { type: "start" }>) => void = () => {};
  const startMessage = new Promise<Extract<ParentMessage, { type: "start" }>>((resolve) => (onStart = resolve));
  process.on("message", (m: unknown) => {
    const msg = m as ParentMessage | null;
    if (msg?.type === "dispose") void shutdown(0);
    else if (msg?.type === "start") onStart(msg);
  });
  process.on("disconnect", () => void shutdown(0));
  try {
    const { vars, logLevel = "warn", persistDir: given } = await startMessage;
    keep = given !== undefined;
    persistDir = given ?? mkdtempSync(join(tmpdir(), "ajet-edge-dev-"));
    if (keep) mkdirSync(persistDir, { recursive: true });
    const { unstable_startWorker } = await import("wrangler");
    const started = await unstable_startWorker({
      config: configPath,
      // the session's token and allowed hosts win over a developer's .dev.vars; local workerd: one invocation per
      // episode (edge/run/dispatcher.ts) unless the parent asks for the queue
      bindings: {
        ...Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { type: "secret_text" as const, value }])),
        AJET_DISPATCH: { type: "plain_text" as const, value: process.env[DISPATCH_ENV] === "queue" ? "queue" : "direct" },
      },
      dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: persistDir, logLevel, watch: false },
    });
    worker = started;
    await started.ready;
    const url = String(await started.url);
    if (closing) return;
    send({ type: "ready", url, persistDir });
  } catch (err) {
    send({ type: "error", message: err instanceof Error ? err.message : String(err) });
    await shutdown(1);
  }
}

await main();
