/**
 * @module test/support/inspector — a Worker isolate's V8 heap as local workerd reports it through its inspector
 * (the Chrome DevTools protocol that `wrangler dev` turns on: workerd runs with `--inspector-addr=localhost:0`).
 * The retained heap after a forced garbage collection does not depend on when V8 chose to collect, so it measures
 * what a Worker keeps, where the process's peak resident memory also counts garbage not yet collected (more of it
 * on a loaded machine, whose GC threads run late).
 */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { get } from "node:http";
import { WebSocket } from "undici";

/** A Worker isolate's V8 heap, bytes: what is in use and what V8 has reserved. */
export interface HeapUsage {
  usedBytes: number;
  totalBytes: number;
}

/** TCP ports a process listens on (Linux /proc: its socket inodes matched against the kernel's listening sockets). */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // the descriptor closed while we listed them
    }
  }
  const ports: number[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // cols[1] local address "HEX_IP:HEX_PORT", cols[3] state (0A = LISTEN), cols[9] inode
      if (cols[3] === "0A" && cols[9] && inodes.has(cols[9])) ports.push(Number.parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

/**
 * The inspector URL of a Worker isolate among the given workerd processes: the one whose inspector lists the target
 * `core:user:<workerName>`. @returns its `webSocketDebuggerUrl`, or null when no process lists it
 */
export async function findWorkerInspector(pids: readonly number[], workerName: string): Promise<string | null> {
  const id = `core:user:${workerName}`;
  // the process run with `--inspector-addr` first: its other port is the Worker's (asked nothing it would count)
  const cmdline = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      return "";
    }
  };
  const ordered = [...pids].sort((a, b) => Number(cmdline(b).includes("--inspector-addr")) - Number(cmdline(a).includes("--inspector-addr")));
  for (const pid of ordered) {
    for (const port of listeningPorts(pid)) {
      try {
        const targets = JSON.parse(await getOnce(`http://127.0.0.1:${port}/json/list`)) as unknown;
        if (!Array.isArray(targets)) continue;
        const target = targets.find((t: { id?: unknown }) => t?.id === id) as { webSocketDebuggerUrl?: string } | undefined;
        if (target?.webSocketDebuggerUrl) return target.webSocketDebuggerUrl;
      } catch {
        // not an inspector (the Worker's own port answers something else, or nothing in time)
      }
    }
  }
  return null;
}

/**
 * One GET on a connection of its own, closed after the answer: workerd's inspector serves one connection at a time,
 * so a kept-alive socket (the global fetch's pool) would hold off the WebSocket that follows.
 * @returns the body of a 200 answer @throws on any other status, an error or 10 s without an answer
 */
function getOnce(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false, headers: { connection: "close" }, timeout: 10_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${url}: no answer in 10 s`)));
    req.on("error", reject);
  });
}

/**
 * Forces a full garbage collection in the isolate behind `debuggerUrl` and reads its heap. Local workerd (wrangler
 * 4.86's) hands an inspector's messages to an idle isolate only when the isolate next runs an event, and has never
 * answered the first session opened on a target: so while waiting, `wake` is called every 250 ms (a request the
 * isolate serves), and a session unanswered for 10 s is closed and a new one opened, until `timeoutMs`.
 * @param wake sends the isolate something to do (e.g. a GET of the Worker's `/health`)
 * @param timeoutMs how long all attempts may take together (ms); generous: a loaded machine answers late
 * @throws when no session is answered within `timeoutMs`
 */
export async function heapAfterGc(debuggerUrl: string, wake: () => Promise<unknown>, timeoutMs = 90_000): Promise<HeapUsage> {
  const until = Date.now() + timeoutMs;
  const waking = setInterval(() => void wake().catch(() => undefined), 250);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await oneSession(debuggerUrl, Math.min(10_000, Math.max(1, until - Date.now())));
      } catch (err) {
        if (Date.now() >= until) throw new Error(`inspector ${debuggerUrl}: no session answered in ${timeoutMs} ms (${attempt} tried; last: ${(err as Error).message})`);
      }
    }
  } finally {
    clearInterval(waking);
  }
}

/** One inspector session: a forced GC, then the heap's use. @throws when it is refused or unanswered in `timeoutMs` */
async function oneSession(debuggerUrl: string, timeoutMs: number): Promise<HeapUsage> {
  const ws = new WebSocket(debuggerUrl);
  const pending = new Map<number, (m: { result?: Record<string, unknown>; error?: { message?: string } }) => void>();
  let next = 0;
  const call = (method: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      pending.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.message ?? "refused"}`)) : resolve(m.result ?? {})));
      ws.send(JSON.stringify({ id, method, params: {} }));
    });
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data)) as { id?: number };
    if (m.id !== undefined) pending.get(m.id)?.(m as never);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      (async () => {
        await new Promise<void>((resolve, reject) => {
          ws.onopen = () => resolve();
          ws.onerror = () => reject(new Error("the connection was refused"));
        });
        await call("HeapProfiler.collectGarbage");
        const usage = await call("Runtime.getHeapUsage");
        return { usedBytes: Number(usage.usedSize), totalBytes: Number(usage.totalSize) };
      })(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`unanswered for ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    ws.close();
  }
}
