/**
 * @module sandbox/local-server/processes — the local sandbox server's processes: each command runs in a session
 * and process group of its own (`setsid` through Node's `detached`), under resource limits set with `prlimit`
 * (util-linux, in every Debian install; no root needed to lower a limit) or, without it, the shell's `ulimit`.
 * Every process of a sandbox carries the environment marker `AJET_SANDBOX=<instance>/<sandbox id>`: a process that
 * left its group (setsid, a daemon) is still found by scanning `/proc/<pid>/environ`, and so are the processes a
 * crashed server left behind. What the limits are, and what a non-root Linux user cannot get: docs/design/sandboxes.md.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";

/** The environment variable every sandbox process carries: `<instance>/<sandbox id>`. */
export const SANDBOX_MARKER_ENV = "AJET_SANDBOX";

/** Resource limits of one process tree (each process gets them: rlimits are per process). */
export interface ProcessLimits {
  /** RLIMIT_DATA: private writable memory (heap, stacks), bytes */
  memoryBytes: number;
  /** RLIMIT_CPU: CPU seconds of each process */
  cpuSeconds: number;
  /** RLIMIT_FSIZE: the largest file a process may write, bytes */
  fileBytes: number;
}

/** Where `prlimit` is, when this machine has it (looked up once). */
let prlimitPath: string | null | undefined;
function findPrlimit(): string | null {
  if (prlimitPath !== undefined) return prlimitPath;
  for (const p of ["/usr/bin/prlimit", "/bin/prlimit", "/usr/local/bin/prlimit"]) {
    if (existsSync(p)) return (prlimitPath = p);
  }
  return (prlimitPath = null);
}

/**
 * The argv that runs `sh -c script` under `limits`: `prlimit --data= --cpu= --fsize= --core=0 -- sh -c script`, or
 * without prlimit `sh -c 'ulimit -d KiB -t s -c 0; exec sh -c "$0"' script` (no file-size limit then: `ulimit -f`
 * counts 512- or 1024-byte blocks depending on the shell).
 */
export function limitedArgv(script: string, limits: ProcessLimits): string[] {
  const prlimit = findPrlimit();
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  if (prlimit) {
    return [prlimit, `--data=${Math.floor(limits.memoryBytes)}`, `--cpu=${cpu}`, `--fsize=${Math.floor(limits.fileBytes)}`, "--core=0", "--", "/bin/sh", "-c", script];
  }
  return ["/bin/sh", "-c", `ulimit -d ${Math.floor(limits.memoryBytes / 1024)} -t ${cpu} -c 0; exec /bin/sh -c "$0"`, script];
}

/** Options of {@link spawnLimited}. */
export interface SpawnLimitedOptions {
  cwd: string;
  /** the whole environment (nothing of the server's is inherited) */
  env: Record<string, string>;
  limits: ProcessLimits;
  /** an extra pipe on fd 3 (the code interpreter's result channel) */
  resultPipe?: boolean;
}

/**
 * Starts `sh -c script` detached (its own session and process group: `pid` is the group id), stdin closed, stdout
 * and stderr (and fd 3 with `resultPipe`) piped.
 * @throws Error when the process cannot be spawned
 */
export function spawnLimited(script: string, o: SpawnLimitedOptions): ChildProcess {
  const [cmd, ...args] = limitedArgv(script, o.limits);
  return spawn(cmd!, args, {
    cwd: o.cwd,
    // the whole environment, nothing of the server's (the cast: the build program's ProcessEnv lists the Worker's vars)
    env: o.env as NodeJS.ProcessEnv,
    detached: true,
    stdio: o.resultPipe ? ["ignore", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe"],
  });
}

/** Sends `signal` to a whole process group; false when the group is gone. */
export function killGroup(pgid: number, signal: NodeJS.Signals = "SIGKILL"): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True when this machine has a readable `/proc` (Linux). */
export const HAS_PROC = existsSync("/proc/self/environ");

/** The value of `SANDBOX_MARKER_ENV` in a process's environment, or null (not ours, gone, or not readable). */
function markerOf(pid: number): string | null {
  let env: string;
  try {
    env = readFileSync(`/proc/${pid}/environ`, "latin1");
  } catch {
    return null;
  }
  const key = `${SANDBOX_MARKER_ENV}=`;
  const at = env.startsWith(key) ? 0 : env.indexOf(`\u0000${key}`);
  if (at < 0) return null;
  const start = at === 0 ? key.length : at + 1 + key.length;
  const end = env.indexOf("\u0000", start);
  return env.slice(start, end < 0 ? env.length : end);
}

/**
 * The live processes whose marker `matches` (pid → marker), from `/proc` (empty without it). Zombies are left out:
 * they run nothing and their environment is gone.
 */
export function markedProcesses(matches: (marker: string) => boolean): Map<number, string> {
  const found = new Map<number, string>();
  if (!HAS_PROC) return found;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const marker = markerOf(pid);
    if (marker !== null && matches(marker)) found.set(pid, marker);
  }
  return found;
}

/**
 * Kills every process whose marker `matches`, until none is left (a process forking while it is killed is found
 * on the next pass): SIGSTOP first (a stopped process cannot fork), then SIGKILL.
 * @returns how many processes were killed, and whether none is left after `maxPasses`
 */
export function killMarked(matches: (marker: string) => boolean, maxPasses = 20): { killed: number; clean: boolean } {
  let killed = 0;
  for (let pass = 0; pass < maxPasses; pass++) {
    const found = markedProcesses(matches);
    if (found.size === 0) return { killed, clean: true };
    for (const pid of found.keys()) {
      try {
        process.kill(pid, "SIGSTOP");
      } catch {
        // gone already
      }
    }
    for (const pid of found.keys()) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch {
        // gone already
      }
    }
  }
  return { killed, clean: markedProcesses(matches).size === 0 };
}

/**
 * The start time of a process (clock ticks since boot, field 22 of `/proc/<pid>/stat`), or null when it is gone or
 * there is no `/proc`. With the pid it names one process for good: a pid can be reused, the pair cannot.
 */
export function processStartTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

/** True when the process `pid` started at `startTicks` still runs (without `/proc`: when `pid` exists). */
export function sameProcessAlive(pid: number, startTicks: number | null): boolean {
  if (HAS_PROC && startTicks !== null) return processStartTicks(pid) === startTicks;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The real executable behind a command name in this environment (a pyenv shim resolves to the interpreter it
 * runs), or null when it is not installed. Sandboxes get a fresh HOME, where version-manager shims stop working.
 */
export function resolveInterpreter(command: "python3" | "node"): string | null {
  if (command === "node") return process.execPath;
  const r = spawnSync(command, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8", timeout: 10_000 });
  const path = r.status === 0 ? r.stdout.trim() : "";
  return path && existsSync(path) ? path : null;
}
