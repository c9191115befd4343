/**
 * @module sandbox/local-server/spawn — the local sandbox server in a process of its own (`ajet-edge
 * sandbox-server`), as `ajet-edge dev`, the chaos suite and the benchmark run it: detached in its own process
 * group (a terminal's Ctrl-C does not kill it under a run that still drains), the token passed in the environment
 * (never argv), ready once it prints its ready line. `stop()` lets it destroy every sandbox; `kill()` is a crash
 * (SIGKILL): its sandboxes are reaped by the next server started on the same root.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** A sandbox server process. */
export interface SandboxServerProcess {
  url: string;
  port: number;
  token: string;
  pid: number;
  child: ChildProcess;
  /** SIGKILL (a crash); resolves once it exited */
  kill(): Promise<void>;
  /** SIGTERM: it destroys every sandbox, then exits; SIGKILL after `timeoutMs` (default 20 s) */
  stop(timeoutMs?: number): Promise<void>;
}

/** Options of {@link spawnSandboxServer}. */
export interface SpawnSandboxServerOptions {
  /** 0 = any free port (a restart passes the old one) */
  port?: number;
  root?: string;
  /** default a fresh random one */
  token?: string;
  /** share of creates refused (the chaos suite's `create-fail`) */
  createFailRate?: number;
  maxSandboxes?: number;
  /** the server's log lines (reaping, ttl) */
  onLog?(line: string): void;
  /** how long the start may take, ms (default 30 000) */
  startTimeoutMs?: number;
}

/** The CLI entry next to this file, in the repository (TypeScript, via tsx) or the installed package (dist/). */
function cliEntry(): string {
  const compiled = import.meta.url.endsWith(".js");
  return fileURLToPath(new URL(compiled ? "../../../../bin/ajet-edge.mjs" : "../../../bin/ajet-edge.mjs", import.meta.url));
}

/**
 * Starts `ajet-edge sandbox-server` and waits for its ready line.
 * @throws Error when it exits first or is not ready in time (the process is killed)
 */
export async function spawnSandboxServer(o: SpawnSandboxServerOptions = {}): Promise<SandboxServerProcess> {
  const token = o.token ?? randomBytes(32).toString("hex");
  const args = [cliEntry(), "sandbox-server", "--port", String(o.port ?? 0)];
  if (o.root) args.push("--root", o.root);
  if (o.createFailRate) args.push("--fault", `create-fail:${o.createFailRate}`);
  if (o.maxSandboxes) args.push("--max-sandboxes", String(o.maxSandboxes));
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, AJET_SANDBOX_TOKEN: token } });
  const pid = child.pid;
  if (pid === undefined) throw new Error("could not spawn the sandbox server");
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const errors: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => {
    errors.push(l);
    o.onLog?.(l);
  });
  const killGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      // gone
    }
  };
  const onExit = () => killGroup("SIGKILL");
  process.on("exit", onExit);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the sandbox server was not ready within ${(o.startTimeoutMs ?? 30_000) / 1000} s`)), o.startTimeoutMs ?? 30_000);
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const m = /ready at (http:\/\/\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        } else o.onLog?.(line);
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`the sandbox server exited before it was ready: ${errors.slice(-3).join(" | ")}`));
      });
    });
    const done = () => process.off("exit", onExit);
    return {
      url,
      port: Number(new URL(url).port),
      token,
      pid,
      child,
      kill: async () => {
        killGroup("SIGKILL");
        await exited;
        done();
      },
      stop: async (timeoutMs = 20_000) => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        const timer = setTimeout(() => killGroup("SIGKILL"), timeoutMs);
        await exited;
        clearTimeout(timer);
        done();
      },
    };
  } catch (err) {
    killGroup("SIGKILL");
    process.off("exit", onExit);
    throw err;
  }
}
