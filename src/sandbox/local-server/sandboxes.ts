/**
 * @module sandbox/local-server/sandboxes — the local sandbox server's sandboxes: each one a temporary directory
 * and the processes its commands start (sandbox/local-server/processes: own process group, resource limits,
 * environment marker). Create is idempotent by the client's id; a destroyed id is never made again (tombstones,
 * kept across restarts), so a create that arrives after the destroy cannot leave an orphan. Destroy answers only
 * once no process of the sandbox is left. Every server instance keeps its state under `<root>/i-<pid>-<start>/`; a
 * new instance reaps the directories and processes of every instance under the same root whose process is gone
 * (a server killed with SIGKILL leaks nothing past the next start).
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { lstat, mkdir, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { INSTANCE_TYPE_NAMES, INSTANCE_TYPES, isInstanceType } from "../../port/sandbox.ts";
import { mulberry32 } from "../../util/mulberry32.ts";
import type { CodeLanguage, FileEntry } from "../types.ts";
import { JAVASCRIPT_RUNNER, PYTHON_RUNNER } from "./interpreters.ts";
import { killGroup, killMarked, processStartTicks, resolveInterpreter, SANDBOX_MARKER_ENV, sameProcessAlive, type ProcessLimits } from "./processes.ts";
import { runInBox } from "./run-command.ts";
import { LocalSandboxError, MAX_FILE_BYTES, type Box, type LiveSandbox, type LocalCreateSpec, type LocalSandboxesOptions, type RunOutcome, type RunRequest } from "./sandbox-types.ts";

export { LocalSandboxError, MAX_FILE_BYTES, type LiveSandbox, type LocalCreateSpec, type LocalSandboxesOptions, type OutputEvent, type RunOutcome, type RunRequest } from "./sandbox-types.ts";

const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Tombstones older than this are forgotten at start (a create that late is no retry). */
const TOMBSTONE_KEEP_MS = 24 * 3600 * 1000;

/** The default state root: one per user under the system's temp dir. */
export function defaultSandboxRoot(): string {
  let user = "user";
  try {
    user = userInfo().username.replace(/[^A-Za-z0-9_-]/g, "_") || "user";
  } catch {
    // no user name (a container's uid without /etc/passwd entry)
  }
  return join(tmpdir(), `ajet-edge-sandboxes-${user}`);
}

/** The sandboxes of one server instance. */
export class LocalSandboxes {
  readonly #boxes = new Map<string, Box>();
  readonly #tombstones = new Map<string, number>();
  /** destroys waiting for the next `/proc` sweep */
  readonly #doomed = new Map<string, () => void>();
  #sweeping: Promise<void> | null = null;
  readonly #draw: () => number;
  readonly #interpreters: { python: string | null; node: string };
  #closed = false;
  /** peak of live sandboxes since start (the benchmark reads it) */
  peakLive = 0;
  /** creates refused by the injected fault */
  injectedFailures = 0;

  private constructor(
    readonly root: string,
    /** this instance's directory name under the root (also the first half of its processes' marker) */
    readonly instance: string,
    private readonly o: Required<Pick<LocalSandboxesOptions, "maxSandboxes" | "createFailRate">> & LocalSandboxesOptions,
  ) {
    this.#draw = mulberry32(o.seed ?? 1);
    this.#interpreters = { python: resolveInterpreter("python3"), node: resolveInterpreter("node")! };
  }

  /** This instance's directory. */
  get dir(): string {
    return join(this.root, this.instance);
  }

  /**
   * Opens a server instance under `root`: reaps what dead instances left (their processes and directories), then
   * takes a directory of its own.
   * @returns the instance and how many sandboxes of dead instances it reaped
   */
  static open(options: LocalSandboxesOptions = {}): { sandboxes: LocalSandboxes; reaped: number } {
    const root = resolve(options.root ?? defaultSandboxRoot());
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const ticks = processStartTicks(process.pid);
    const instance = `i-${process.pid}-${ticks ?? Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const me = new LocalSandboxes(root, instance, { maxSandboxes: 4000, createFailRate: 0, ...options });
    me.#loadTombstones();
    const reaped = me.#reapDeadInstances();
    mkdirSync(join(me.dir, "boxes"), { recursive: true });
    mkdirSync(join(me.dir, "cells"), { recursive: true });
    mkdirSync(join(me.dir, "lib"), { recursive: true });
    writeFileSync(join(me.dir, "owner.json"), JSON.stringify({ pid: process.pid, startTicks: ticks, startedAtMs: Date.now() }));
    writeFileSync(join(me.dir, "lib", "run.py"), PYTHON_RUNNER);
    writeFileSync(join(me.dir, "lib", "run.cjs"), JAVASCRIPT_RUNNER);
    return { sandboxes: me, reaped };
  }

  #loadTombstones(): void {
    const file = join(this.root, "tombstones.jsonl");
    if (!existsSync(file)) return;
    const cutoff = Date.now() - TOMBSTONE_KEEP_MS;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line) continue;
      try {
        const t = JSON.parse(line) as { id: string; atMs: number };
        if (t.atMs >= cutoff) this.#tombstones.set(t.id, t.atMs);
      } catch {
        // a line cut by a crash
      }
    }
  }

  #bury(id: string): void {
    const atMs = Date.now();
    this.#tombstones.set(id, atMs);
    appendFileSync(join(this.root, "tombstones.jsonl"), JSON.stringify({ id, atMs }) + "\n");
  }

  /** Kills the processes and removes the directories of every instance under the root whose process is gone. */
  #reapDeadInstances(): number {
    let reaped = 0;
    for (const name of readdirSync(this.root)) {
      if (!name.startsWith("i-") || name === this.instance) continue;
      const dir = join(this.root, name);
      let owner: { pid: number; startTicks: number | null } | null = null;
      try {
        owner = JSON.parse(readFileSync(join(dir, "owner.json"), "utf8")) as { pid: number; startTicks: number | null };
      } catch {
        // no owner file: an instance that died while starting
      }
      if (owner && sameProcessAlive(owner.pid, owner.startTicks)) continue;
      const { killed } = killMarked((m) => m.startsWith(`${name}/`));
      let ids: string[] = [];
      try {
        ids = readdirSync(join(dir, "boxes"));
      } catch {
        // no boxes dir
      }
      for (const id of ids) this.#bury(id);
      reaped += ids.length;
      rmSyncQuiet(dir);
      this.o.log?.(`sandbox server: reaped ${ids.length} sandbox(es) and ${killed} process(es) a stopped server (${name}) left`);
    }
    return reaped;
  }

  #box(id: string): Box {
    const box = this.#boxes.get(id);
    if (!box || box.destroying) {
      const why = this.#tombstones.has(id) || box ? "was destroyed" : "does not exist";
      throw new LocalSandboxError(404, "sandbox_not_found", `sandbox ${id} ${why} (it died, its attempt ended, or the sandbox server restarted)`);
    }
    return box;
  }

  /** The live sandboxes. */
  list(): LiveSandbox[] {
    return [...this.#boxes.values()].filter((b) => !b.destroying).map((b) => ({ id: b.id, instanceType: b.instanceType, createdAtMs: b.createdAtMs, running: b.running }));
  }

  /**
   * Creates sandbox `id`, or answers that it exists (idempotent).
   * @throws LocalSandboxError 400 (bad id, unknown instance type, an image), 410 (destroyed before), 503 retryable
   *   (at capacity, injected failure, server closing)
   */
  async create(id: string, spec: LocalCreateSpec): Promise<{ created: boolean }> {
    if (!ID.test(id)) throw new LocalSandboxError(400, "bad_id", `sandbox id ${JSON.stringify(id)} must be 1–63 lowercase letters, digits, '-' or '_'`);
    if (this.#tombstones.has(id)) throw new LocalSandboxError(410, "sandbox_destroyed", `sandbox ${id} was destroyed; a sandbox id is never reused (a retried attempt asks for a new one)`);
    const existing = this.#boxes.get(id);
    if (existing) {
      if (existing.destroying) throw new LocalSandboxError(410, "sandbox_destroyed", `sandbox ${id} is being destroyed; a sandbox id is never reused`);
      return { created: false };
    }
    const instanceType = spec.instanceType ?? "lite";
    if (!isInstanceType(instanceType)) {
      throw new LocalSandboxError(400, "bad_instance_type", `instanceType ${JSON.stringify(instanceType)} is not an instance type; use one of ${INSTANCE_TYPE_NAMES.join(", ")}`);
    }
    if (spec.image !== undefined && spec.image !== "default") {
      throw new LocalSandboxError(400, "bad_image", `image ${JSON.stringify(spec.image)}: the local sandbox server runs no container images, only "default" (Python 3 and Node); leave image unset, or deploy with a containers entry for it`);
    }
    if (this.#closed) throw new LocalSandboxError(503, "closing", "the sandbox server is shutting down", true);
    if (this.o.createFailRate > 0 && this.#draw() < this.o.createFailRate) {
      this.injectedFailures++;
      this.o.log?.(`sandbox server: create of ${id} refused (injected fault)`);
      throw new LocalSandboxError(503, "injected_failure", "create refused (fault injected with --fault create-fail)", true);
    }
    if (this.#boxes.size >= this.o.maxSandboxes) {
      throw new LocalSandboxError(503, "at_capacity", `the sandbox server holds ${this.#boxes.size} sandboxes, its limit (--max-sandboxes); try again later`, true);
    }
    const ttlSeconds = Math.min(Math.max(spec.ttlSeconds ?? 3600, 1), 24 * 3600);
    const dir = join(this.dir, "boxes", id);
    const box: Box = {
      id,
      dir,
      instanceType,
      env: { ...(spec.env ?? {}) },
      createdAtMs: Date.now(),
      groups: new Set(),
      running: 0,
      ttl: setTimeout(() => {
        this.o.log?.(`sandbox server: ${id} reached its ttl of ${ttlSeconds} s; destroying it`);
        void this.destroy(id).catch(() => undefined);
      }, ttlSeconds * 1000),
      destroying: null,
      cells: 0,
    };
    box.ttl.unref?.();
    this.#boxes.set(id, box);
    this.peakLive = Math.max(this.peakLive, this.#boxes.size);
    try {
      await mkdir(join(dir, ".tmp"), { recursive: true, mode: 0o700 });
    } catch (err) {
      clearTimeout(box.ttl);
      this.#boxes.delete(id);
      throw new LocalSandboxError(503, "create_failed", `could not make the sandbox directory: ${(err as Error).message}`, true);
    }
    return { created: true };
  }

  /** A path inside the sandbox's workdir. @throws LocalSandboxError 400 when it leaves the workdir */
  async #inside(box: Box, path: string, field: string): Promise<string> {
    if (path.includes("\u0000")) throw new LocalSandboxError(400, "bad_path", `${field} must not contain NUL characters`);
    const full = resolve(box.dir, path);
    const rel = relative(box.dir, full);
    if (rel === ".." || rel.startsWith(`..${sep}`) || resolve(box.dir, rel) !== full) {
      throw new LocalSandboxError(400, "bad_path", `${field} ${JSON.stringify(path)} leaves the sandbox's workdir; use a path relative to it`);
    }
    // a symlink inside the workdir must not lead out of it
    const existing = await realpath(full).catch(() => null);
    const base = await realpath(box.dir);
    if (existing && existing !== base && !existing.startsWith(base + sep)) {
      throw new LocalSandboxError(400, "bad_path", `${field} ${JSON.stringify(path)} leads out of the sandbox's workdir through a symlink`);
    }
    return full;
  }

  #env(box: Box, extra: Record<string, string> | undefined): Record<string, string> {
    const bins = [this.#interpreters.python ? dirname(this.#interpreters.python) : null, dirname(this.#interpreters.node), "/usr/local/bin", "/usr/bin", "/bin"].filter(Boolean);
    return {
      PATH: [...new Set(bins)].join(":"),
      HOME: box.dir,
      TMPDIR: join(box.dir, ".tmp"),
      LANG: "C.UTF-8",
      PYTHONUNBUFFERED: "1",
      PYTHONDONTWRITEBYTECODE: "1",
      ...box.env,
      ...(extra ?? {}),
      // last: a sandbox's environment cannot drop the marker its processes are found by
      [SANDBOX_MARKER_ENV]: `${this.instance}/${box.id}`,
    };
  }

  #limits(box: Box, timeoutMs: number): ProcessLimits {
    const t = INSTANCE_TYPES[box.instanceType];
    return { memoryBytes: t.memoryMiB * 1024 * 1024, cpuSeconds: Math.ceil(timeoutMs / 1000) + 1, fileBytes: t.diskMB * 1_000_000 };
  }

  /**
   * Runs `sh -c script` in the sandbox: streamed output, the timeout and the output cap kill its whole process
   * group (children left running in the background by a command that ended are killed at destroy).
   * @throws LocalSandboxError 404 when the sandbox is gone, 400 for a bad cwd
   */
  async exec(id: string, script: string, req: RunRequest): Promise<RunOutcome> {
    const box = this.#box(id);
    const cwd = await this.#inside(box, req.cwd ?? ".", "cwd");
    return runInBox(box, script, { cwd, env: this.#env(box, req.env), limits: this.#limits(box, req.timeoutMs) }, req, false);
  }

  /**
   * Runs `code` in a fresh interpreter (sandbox/local-server/interpreters).
   * @throws LocalSandboxError 404 when the sandbox is gone, 400 when the language's interpreter is not installed
   */
  async runCode(id: string, language: CodeLanguage, code: string, req: RunRequest): Promise<RunOutcome> {
    const box = this.#box(id);
    const interpreter = language === "python" ? this.#interpreters.python : this.#interpreters.node;
    if (!interpreter) throw new LocalSandboxError(400, "no_interpreter", `no python3 on this machine: install it (apt-get install python3) to run Python code in local sandboxes`);
    const cellDir = join(this.dir, "cells", id);
    await mkdir(cellDir, { recursive: true });
    const cell = join(cellDir, `cell-${++box.cells}.${language === "python" ? "py" : "js"}`);
    await writeFile(cell, code);
    const runner = join(this.dir, "lib", language === "python" ? "run.py" : "run.cjs");
    const script = `exec ${shellQuote(interpreter)} ${shellQuote(runner)} ${shellQuote(cell)}`;
    try {
      return await runInBox(box, script, { cwd: box.dir, env: this.#env(box, req.env), limits: this.#limits(box, req.timeoutMs) }, req, true);
    } finally {
      await rm(cell, { force: true }).catch(() => undefined);
    }
  }

  /** Writes a file (parents made). @throws LocalSandboxError 404 (sandbox), 400 (path), 413 (too large) */
  async writeFile(id: string, path: string, content: Uint8Array): Promise<void> {
    const box = this.#box(id);
    if (content.byteLength > MAX_FILE_BYTES) throw new LocalSandboxError(413, "too_large", `a file of ${content.byteLength} bytes is over the ${MAX_FILE_BYTES}-byte limit of one write`);
    const full = await this.#inside(box, path, "path");
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, content);
  }

  /** Reads a file. @throws LocalSandboxError 404 (`file_not_found` / sandbox), 400 (path, a directory), 413 */
  async readFile(id: string, path: string): Promise<Buffer> {
    const box = this.#box(id);
    const full = await this.#inside(box, path, "path");
    const s = await stat(full).catch(() => null);
    if (!s) throw new LocalSandboxError(404, "file_not_found", `no file ${JSON.stringify(path)} in the sandbox`);
    if (!s.isFile()) throw new LocalSandboxError(400, "not_a_file", `${JSON.stringify(path)} is not a file`);
    if (s.size > MAX_FILE_BYTES) throw new LocalSandboxError(413, "too_large", `${JSON.stringify(path)} has ${s.size} bytes, over the ${MAX_FILE_BYTES}-byte limit of one read`);
    return readFile(full);
  }

  /** Lists a directory (hidden entries included). @throws LocalSandboxError 404, 400 */
  async listFiles(id: string, path: string): Promise<FileEntry[]> {
    const box = this.#box(id);
    const full = await this.#inside(box, path, "path");
    const entries = await readdir(full).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") throw new LocalSandboxError(404, "file_not_found", `no directory ${JSON.stringify(path)} in the sandbox`);
      throw new LocalSandboxError(400, "not_a_directory", `${JSON.stringify(path)} is not a directory`);
    });
    const out: FileEntry[] = [];
    for (const name of entries.sort()) {
      if (full === box.dir && name === ".tmp") continue;
      const s = await lstat(join(full, name)).catch(() => null);
      if (!s) continue;
      out.push({ name, type: s.isSymbolicLink() ? "symlink" : s.isDirectory() ? "directory" : s.isFile() ? "file" : "other", size: s.isFile() ? s.size : 0 });
    }
    return out;
  }

  /**
   * Destroys a sandbox: kills every process of it (its groups, then whatever still carries its marker), removes its
   * directory, remembers the id. Idempotent; answers only when nothing of it runs.
   * @returns whether it existed
   */
  async destroy(id: string): Promise<{ existed: boolean }> {
    const box = this.#boxes.get(id);
    if (!box) {
      if (ID.test(id) && !this.#tombstones.has(id)) this.#bury(id);
      return { existed: false };
    }
    box.destroying ??= (async () => {
      clearTimeout(box.ttl);
      for (const g of box.groups) killGroup(g, "SIGKILL");
      await this.#sweep(id);
      await rm(box.dir, { recursive: true, force: true, maxRetries: 3 });
      await rm(join(this.dir, "cells", id), { recursive: true, force: true });
      this.#bury(id);
      this.#boxes.delete(id);
    })();
    await box.destroying;
    return { existed: true };
  }

  /**
   * Kills whatever still carries the marker of `id` (a process that left its group). Destroys that arrive together
   * share one `/proc` scan per pass (a scan reads every process's environment: one per destroy would not scale).
   */
  #sweep(id: string): Promise<void> {
    return new Promise<void>((resolveSweep) => {
      this.#doomed.set(id, resolveSweep);
      this.#sweeping ??= (async () => {
        await new Promise((r) => setImmediate(r)); // let the destroys of this moment join
        while (this.#doomed.size) {
          const batch = new Map(this.#doomed);
          this.#doomed.clear();
          const prefix = `${this.instance}/`;
          const { clean } = killMarked((m) => m.startsWith(prefix) && batch.has(m.slice(prefix.length)));
          if (!clean) this.o.log?.(`sandbox server: processes of ${[...batch.keys()].join(", ")} kept respawning; killed what it could`);
          for (const done of batch.values()) done();
        }
        this.#sweeping = null;
      })();
    });
  }

  /** Destroys every sandbox and removes this instance's directory (a clean stop). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#boxes.keys()].map((id) => this.destroy(id).catch(() => undefined)));
    killMarked((m) => m.startsWith(`${this.instance}/`));
    rmSyncQuiet(this.dir);
  }
}

function rmSyncQuiet(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // left for the next start's reaping
  }
}

/** A string as one single-quoted POSIX shell word. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
