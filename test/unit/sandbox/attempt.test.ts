/**
 * One attempt's sandbox (sandbox/attempt) against a scripted backend and the memory ledger: the ledger row exists
 * before the create, a create and the first request are tried again on infrastructure failures (same id), the
 * attempt's end destroys and tells the ledger, a failure decides the attempt, bad input is one clear line, and no
 * secret the run does not name (nor the judge's key, nor an episode key) reaches the sandbox.
 */
import { describe, expect, it } from "vitest";
import { AbortCause, EpisodeAbortError } from "../../../src/port/abort.ts";
import { EpisodeSandboxConfig, sandboxIdFor, type SandboxRunConfigInput } from "../../../src/port/sandbox.ts";
import { attemptSandboxes, type AttemptSandboxDeps } from "../../../src/sandbox/attempt.ts";
import type { CreateSpec, SandboxBackend } from "../../../src/sandbox/backend.ts";
import { MemorySandboxLedger } from "../../../src/sandbox/memory-ledger.ts";
import type { SandboxCallRecord } from "../../../src/sandbox/session.ts";
import { SandboxError } from "../../../src/sandbox/types.ts";

/** A backend that records calls and fails on command. */
class ScriptedBackend implements SandboxBackend {
  readonly name = "local";
  readonly calls: string[] = [];
  readonly live = new Set<string>();
  createFailures: SandboxError[] = [];
  firstRequestFailures: SandboxError[] = [];
  destroyFailures: SandboxError[] = [];
  execResult: { stdout: string; stderr?: string; capped?: boolean; exitCode?: number | null } = { stdout: "ok\n" };
  execError: SandboxError | null = null;
  onCreate?: (id: string) => void;
  lastCreate?: CreateSpec;
  lastExec?: { command: string; env?: Record<string, string> | undefined };

  async create(id: string, spec: CreateSpec) {
    this.calls.push(`create ${id}`);
    this.onCreate?.(id);
    this.lastCreate = spec;
    const f = this.createFailures.shift();
    if (f) throw f;
    const created = !this.live.has(id);
    this.live.add(id);
    return { created };
  }
  async exec(_id: string, req: { command: string; timeoutMs: number; env?: Record<string, string> }) {
    this.calls.push(`exec ${req.command}`);
    this.lastExec = { command: req.command, env: req.env };
    if (this.execError) throw this.execError;
    return { exitCode: this.execResult.exitCode === undefined ? 0 : this.execResult.exitCode, stdout: this.execResult.stdout, stderr: this.execResult.stderr ?? "", timedOut: false, capped: this.execResult.capped ?? false, durationMs: 1 };
  }
  async runCode() {
    return { exitCode: 0, stdout: "", stderr: "", timedOut: false, capped: false, durationMs: 1, result: "2", error: null };
  }
  async writeFile(_id: string, path: string) {
    this.calls.push(`write ${path}`);
    const f = this.firstRequestFailures.shift();
    if (f) throw f;
  }
  async readFile() {
    return "";
  }
  async listFiles() {
    this.calls.push("list");
    const f = this.firstRequestFailures.shift();
    if (f) throw f;
    return [];
  }
  async destroy(id: string) {
    this.calls.push(`destroy ${id}`);
    const f = this.destroyFailures.shift();
    if (f) throw f;
    const existed = this.live.delete(id);
    return { existed };
  }
}

const infra = (msg = "connection reset", retryable = true) => new SandboxError("infrastructure", msg, { retryable });

function setup(o: { config?: SandboxRunConfigInput | null; secrets?: Record<string, string>; ledger?: MemorySandboxLedger | null } = {}) {
  const backend = new ScriptedBackend();
  const ledger = o.ledger === null ? undefined : (o.ledger ?? new MemorySandboxLedger({ maxLive: 4, createsPerSecond: 1000, random: () => 0 }));
  const records: SandboxCallRecord[] = [];
  const warnings: string[] = [];
  const controller = new AbortController();
  const config = o.config === null ? undefined : EpisodeSandboxConfig.parse({ maxLive: 4, ...(o.config ?? {}) });
  const deps: AttemptSandboxDeps = {
    provider: { backend, ...(ledger ? { ledger } : {}) },
    config,
    runId: "run-1",
    episodeKey: "gsm8k/0/3#1",
    attempt: 2,
    dispatchId: 1,
    discardEpisodeTimeoutSeconds: 60,
    secrets: o.secrets ?? {},
    episodeKeys: ["sk-ajet-episode-key-0123456789"],
    signal: controller.signal,
    now: () => Date.now(),
    sleep: async () => undefined,
    random: () => 0.5,
    record: (r) => records.push(r),
    log: { warn: (m) => warnings.push(m), info: () => undefined },
  };
  return { backend, ledger, records, warnings, controller, scope: attemptSandboxes(deps), id: sandboxIdFor("run-1", "gsm8k/0/3#1", 2) };
}

describe("an attempt's sandbox", () => {
  it("is recorded in the ledger before it is created, under the attempt's own id, and is the same on every call", async () => {
    const t = setup();
    t.backend.onCreate = (id) => expect(t.ledger!.rows.get(id), "the ledger row exists when the create is sent").toMatchObject({ episodeKey: "gsm8k/0/3#1", attempt: 2, backend: "local", instanceType: "lite" });
    const a = await t.scope.get();
    const b = await t.scope.get();
    expect(a).toBe(b);
    expect(a.id).toBe(t.id);
    expect(t.backend.calls.filter((c) => c.startsWith("create"))).toEqual([`create ${t.id}`]);
    // the ttl backstop covers the attempt's whole lifetime (8 × discard timeout) and a little more
    expect(t.backend.lastCreate?.ttlSeconds).toBe(8 * 60 + 120);
  });

  it("a retried attempt gets a fresh id; the same attempt always the same one", () => {
    expect(sandboxIdFor("run-1", "gsm8k/0/3#1", 2)).toBe(sandboxIdFor("run-1", "gsm8k/0/3#1", 2));
    expect(sandboxIdFor("run-1", "gsm8k/0/3#1", 3)).not.toBe(sandboxIdFor("run-1", "gsm8k/0/3#1", 2));
    expect(sandboxIdFor("run-2", "gsm8k/0/3#1", 2)).not.toBe(sandboxIdFor("run-1", "gsm8k/0/3#1", 2));
    expect(sandboxIdFor("run-1", "gsm8k/0/3#1", 2)).toMatch(/^sb-[0-9a-f]{16}-[0-9a-f]{16}$/);
  });

  it("a create that fails on the infrastructure is sent again (same id) and the first request too; the function never sees it", async () => {
    const t = setup();
    t.backend.createFailures = [infra(), infra("no answer", false)];
    t.backend.firstRequestFailures = [infra("first connection closed mid-handshake")];
    const sb = await t.scope.get();
    expect(t.backend.calls.filter((c) => c.startsWith("create"))).toEqual([`create ${t.id}`, `create ${t.id}`, `create ${t.id}`]);
    expect(t.backend.calls.filter((c) => c === "list")).toHaveLength(2);
    expect(t.scope.fatal()).toBeNull();
    expect((await sb.commands.run("echo ok")).stdout).toBe("ok\n");
  });

  it("a create refused past its tries is an infrastructure failure: the attempt is aborted (sandbox_failure), the id destroyed anyway", async () => {
    const t = setup();
    t.backend.createFailures = Array.from({ length: 5 }, () => infra());
    await expect(t.scope.get()).rejects.toMatchObject({ kind: "infrastructure" });
    expect(t.scope.fatal()?.cause).toBe(AbortCause.sandboxFailure);
    const summary = await t.scope.close();
    expect(summary).toMatchObject({ sandboxId: t.id, end: "create_failed" });
    expect(t.backend.calls.at(-1)).toBe(`destroy ${t.id}`);
    expect(t.ledger!.rows.get(t.id)).toMatchObject({ end: "create_failed", failure: expect.stringContaining("connection reset") });
    expect(t.ledger!.live).toBe(0);
  });

  it("a destroyed id is not created again (no retry on 410)", async () => {
    const t = setup();
    t.backend.createFailures = [new SandboxError("infrastructure", "destroyed", { code: "sandbox_destroyed" })];
    await expect(t.scope.get()).rejects.toMatchObject({ code: "sandbox_destroyed" });
    expect(t.backend.calls.filter((c) => c.startsWith("create"))).toHaveLength(1);
  });

  it("a sandbox that dies mid-attempt decides the attempt even when the function catches the error", async () => {
    const t = setup();
    const sb = await t.scope.get();
    t.backend.execError = new SandboxError("infrastructure", "sandbox sb-… was destroyed", { code: "sandbox_not_found" });
    await sb.commands.run("python3 main.py").catch(() => undefined); // the function swallows it
    expect(t.scope.fatal()).toMatchObject({ cause: AbortCause.sandboxFailure });
  });

  it("a command cut by the attempt's stop (the run stopped) decides the attempt with the stop's cause", async () => {
    const t = setup();
    const sb = await t.scope.get();
    t.backend.exec = async () => {
      t.controller.abort(new EpisodeAbortError(AbortCause.runStopped, "run stopped"));
      throw new Error("aborted");
    };
    await expect(sb.commands.run("python3 long.py")).rejects.toMatchObject({ kind: "closed" });
    expect(t.scope.fatal()?.cause).toBe(AbortCause.runStopped);
  });

  it("the attempt's end destroys the sandbox, tells the ledger (seconds, commands), and refuses later calls", async () => {
    const t = setup();
    const sb = await t.scope.get();
    await sb.commands.run("echo 1");
    await sb.commands.run("echo 2");
    const summary = await t.scope.close();
    expect(summary).toMatchObject({ sandboxId: t.id, end: "destroyed", commands: 2, failure: null });
    expect(t.backend.live.size).toBe(0);
    expect(t.ledger!.rows.get(t.id)).toMatchObject({ end: "destroyed", commands: 2 });
    await expect(sb.commands.run("echo 3")).rejects.toMatchObject({ kind: "closed" });
    expect(await t.scope.close()).toBe(summary); // idempotent
    expect(t.records.map((r) => r.op)).toEqual(["create", "command", "command", "destroy"]);
  });

  it("a destroy the backend does not confirm is retried, then left to the run's sweep (the ledger knows)", async () => {
    const t = setup();
    await t.scope.get();
    t.backend.destroyFailures = Array.from({ length: 4 }, () => infra("timeout"));
    const summary = await t.scope.close();
    expect(summary.end).toBe("destroy_unconfirmed");
    expect(t.backend.calls.filter((c) => c.startsWith("destroy"))).toHaveLength(4);
    expect(t.ledger!.rows.get(t.id)?.end).toBe("destroy_unconfirmed");
    expect(t.ledger!.live).toBe(1);
  });

  it("an attempt the run no longer holds creates nothing", async () => {
    const ledger = new MemorySandboxLedger({ maxLive: 4, createsPerSecond: 1000, isCurrent: () => false });
    const t = setup({ ledger });
    await expect(t.scope.get()).rejects.toMatchObject({ kind: "closed" });
    expect(t.backend.calls).toEqual([]);
    expect(t.scope.fatal()).toBeNull();
  });

  it("a function that never asks pays nothing: no ledger call, no backend call", async () => {
    const t = setup();
    expect(await t.scope.close()).toMatchObject({ sandboxId: null, end: null });
    expect(t.backend.calls).toEqual([]);
    expect(t.ledger!.rows.size).toBe(0);
  });
});

describe("bad input: one clear line naming the field and the fix", () => {
  it("a run without sandboxes", async () => {
    const t = setup({ config: null });
    await expect(t.scope.get()).rejects.toThrow('ctx.sandbox(): this run has no sandboxes (its run spec has no "sandbox" block, or sandbox.enabled is false); add "sandbox": {"enabled": true} to the run spec (ajet-edge dev: --sandbox), or use a function that needs none');
    expect(t.scope.fatal()?.cause).toBe(AbortCause.sandboxDisabled);
    const off = setup({ config: { enabled: false } });
    await expect(off.scope.get()).rejects.toMatchObject({ kind: "disabled" });
  });

  it("an unknown instance type", async () => {
    const t = setup();
    await expect(t.scope.get({ instanceType: "huge" })).rejects.toThrow('ctx.sandbox(): instanceType "huge" is not an instance type; use one of lite, basic, standard-1, standard-2, standard-3, standard-4');
    expect(t.scope.fatal()?.cause).toBe(AbortCause.sandboxMisconfigured);
    expect(t.backend.calls).toEqual([]);
  });

  it("a command over the output cap", async () => {
    const t = setup({ config: { maxOutputBytes: 2048 } });
    const sb = await t.scope.get();
    t.backend.execResult = { stdout: "y\n".repeat(1024), capped: true, exitCode: null };
    await expect(sb.commands.run("yes")).rejects.toThrow(
      'commands.run "yes" printed more than the run\'s sandbox.maxOutputBytes (2048 bytes) and was stopped; write large output to a file and read what you need, or raise sandbox.maxOutputBytes in the run spec',
    );
    expect(t.scope.fatal(), "the model's program printing too much is no infrastructure failure").toBeNull();
  });

  it("a timeout above the run's sandbox.commandTimeoutSeconds is cut to it; a bad timeout and an absolute path are refused", async () => {
    const t = setup({ config: { commandTimeoutSeconds: 30 } });
    const sb = await t.scope.get();
    let sent = 0;
    const exec = t.backend.exec.bind(t.backend);
    t.backend.exec = (id, req) => ((sent = req.timeoutMs), exec(id, req));
    await sb.commands.run("sleep 1", { timeoutMs: 60_000 });
    expect(sent).toBe(30_000);
    await expect(sb.commands.run("sleep 1", { timeoutMs: -1 })).rejects.toThrow("commands.run: timeoutMs must be a positive number of milliseconds, got -1");
    await expect(sb.files.write("/etc/passwd", "x")).rejects.toMatchObject({ kind: "config", message: expect.stringContaining("is absolute") });
    await expect(t.scope.get({ instanceType: "basic" })).rejects.toMatchObject({ kind: "config", message: expect.stringContaining("one sandbox") });
  });
});

describe("secrets never enter a sandbox unless the run names them", () => {
  const secrets = { GITHUB_TOKEN: "ghp_allowed_0123456789", OPENAI_KEY: "sk-operator-secret-abcdef", JUDGE_API_KEY: "judge-key-0123456789" };

  it("a secret the run names may go in: env, command, file", async () => {
    const t = setup({ config: { secrets: ["GITHUB_TOKEN"] }, secrets });
    const sb = await t.scope.get({ env: { TOKEN: secrets.GITHUB_TOKEN } });
    await sb.commands.run(`git clone https://x:${secrets.GITHUB_TOKEN}@example/repo`);
    await sb.files.write("token.txt", secrets.GITHUB_TOKEN);
    expect(t.backend.lastCreate?.env).toEqual({ TOKEN: secrets.GITHUB_TOKEN });
  });

  it("any other secret is refused before it is sent, naming the secret (never its value)", async () => {
    const t = setup({ config: { secrets: ["GITHUB_TOKEN"] }, secrets });
    await expect(t.scope.get({ env: { K: secrets.OPENAI_KEY } })).rejects.toThrow(
      'ctx.sandbox() env.K: holds the value of the secret OPENAI_KEY, which this run does not let into its sandboxes; add "OPENAI_KEY" to the run spec\'s sandbox.secrets to let it in',
    );
    expect(t.scope.fatal()?.cause).toBe(AbortCause.sandboxSecret);
    expect(t.backend.calls).toEqual([]);
    const u = setup({ config: { secrets: ["GITHUB_TOKEN"] }, secrets });
    const sb = await u.scope.get();
    await expect(sb.commands.run(`curl -H 'Authorization: ${secrets.OPENAI_KEY}' x`)).rejects.toMatchObject({ kind: "secret" });
    await expect(sb.files.write("a.txt", `key=${secrets.OPENAI_KEY}`)).rejects.toMatchObject({ kind: "secret" });
    await expect(sb.code.run(`print("${secrets.OPENAI_KEY}")`)).rejects.toMatchObject({ kind: "secret" });
    expect(u.backend.calls.some((c) => c.includes(secrets.OPENAI_KEY))).toBe(false);
  });

  it("the judge's key never goes in, even when the run names it; nor an episode's LLM key", async () => {
    const t = setup({ config: { secrets: ["JUDGE_API_KEY"] }, secrets });
    const sb = await t.scope.get();
    await expect(sb.commands.run(`echo ${secrets.JUDGE_API_KEY}`)).rejects.toThrow("JUDGE_API_KEY never enters a sandbox");
    await expect(sb.commands.run("echo sk-ajet-episode-key-0123456789")).rejects.toThrow("an episode's LLM key never enters a sandbox");
  });
});

describe("pacing through the ledger", () => {
  it("at the run's live cap a new sandbox waits until one is destroyed", async () => {
    let now = 0;
    const ledger = new MemorySandboxLedger({ maxLive: 1, createsPerSecond: 1000, now: () => now, random: () => 0 });
    const first = setup({ ledger });
    await first.scope.get();
    const second = setup({ ledger });
    // a second attempt of another episode
    const scope = attemptSandboxes({
      provider: { backend: second.backend, ledger },
      config: EpisodeSandboxConfig.parse({ maxLive: 1 }),
      runId: "run-1",
      episodeKey: "gsm8k/0/4#0",
      attempt: 1,
      dispatchId: 1,
      discardEpisodeTimeoutSeconds: 60,
      secrets: {},
      episodeKeys: [],
      signal: new AbortController().signal,
      now: () => now,
      sleep: async (ms) => {
        now += ms;
        if (now > 3_000) await first.scope.close(); // the first attempt ends after 3 s
      },
      random: () => 0,
      log: { warn: () => undefined, info: () => undefined },
    });
    const sb = await scope.get();
    expect(sb.id).toBe(sandboxIdFor("run-1", "gsm8k/0/4#0", 1));
    expect(ledger.waits).toBeGreaterThanOrEqual(3);
    expect(ledger.peakLive).toBe(1);
  });
});
