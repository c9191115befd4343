/**
 * @module cli/dev/worker-ipc — the words `startLocalWorker` (worker.ts) and the Worker host process
 * (worker-host.ts) share: the IPC messages each way, wrangler's log levels and the environment variable that
 * carries the dispatch mode. Both files import this one; neither imports the other.
 */

/** Environment variable the host reads into the Worker's `AJET_DISPATCH` (`direct` or `queue`). */
export const DISPATCH_ENV = "AJET_EDGE_DISPATCH";

/** Messages the host sends to its parent. */
export type HostMessage = { type: "ready"; url: string; persistDir: string } | { type: "error"; message: string };
/** Messages the parent sends to the host. */
export type ParentMessage = { type: "start"; vars: Record<string, string>; logLevel?: WranglerLogLevel; persistDir?: string } | { type: "dispose" };

/** wrangler's log levels: which of the Worker's console lines reach the host's output (`log` = console.log too). */
export type WranglerLogLevel = "debug" | "log" | "warn" | "error";
