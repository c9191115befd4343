/**
 * Episodes that use a sandbox, through `runEpisode` against the in-process emulator and a real local sandbox
 * server: the sandbox is made on `ctx.sandbox()`, recorded in the ledger first, destroyed when the attempt is over
 * (before `runEpisode` returns), and its commands are in the transcript; an infrastructure failure of the sandbox
 * aborts the attempt (`sandbox_failure`) even when the function catches it and returns a reward — never an end, never
 * a score; a sandbox asked for in a run without one aborts it as `sandbox_disabled` (not retried).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortCause, EpisodeSandboxConfig, isRetryableCause } from "../../../src/port/index.ts";
import { runEpisode } from "../../../src/runtime/episode-runner.ts";
import type { EpisodeTranscript } from "../../../src/runtime/transcript.ts";
import { listLocalSandboxes, localSandboxBackend } from "../../../src/sandbox/local-backend.ts";
import { startSandboxServer, type RunningSandboxServer } from "../../../src/sandbox/local-server/index.ts";
import { MemorySandboxLedger } from "../../../src/sandbox/memory-ledger.ts";
import type { SandboxBackend } from "../../../src/sandbox/backend.ts";
import { SandboxError } from "../../../src/sandbox/types.ts";
import { defineRolloutFunction, type RolloutContext, type RolloutFunction } from "../../../src/sdk/contract.ts";
import { countdownTask, episodeMessage, methodsOf, recordingPort, rollingEmulator, runnerDeps, SWARM_A, SwarmNet } from "./_harness.ts";

let root: string;
let server: RunningSandboxServer;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "ajet-sbx-episodes-"));
  server = await startSandboxServer({ root });
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const askOnce = (ctx: RolloutContext) => ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });
const fn = (body: (ctx: RolloutContext) => Promise<unknown>): Record<string, RolloutFunction> => ({
  countdown: defineRolloutFunction({ name: "countdown", sandbox: true, run: (_task, ctx) => body(ctx) as Promise<{ reward: number }> }),
});

let runs = 0;
async function run(functions: Record<string, RolloutFunction>, o: { sandbox?: boolean; backend?: SandboxBackend; episodeType?: "train" | "eval" } = {}) {
  const { emu } = await rollingEmulator({ batchSize: 8, numRepeat: 4, maxEnvWorker: 32 }, { policy: { initialAccuracy: 1, malformedRate: 0 } });
  const net = new SwarmNet().add(SWARM_A, "default", emu);
  const port = recordingPort();
  const ledger = new MemorySandboxLedger({ maxLive: 8, createsPerSecond: 100 });
  const backend = o.backend ?? localSandboxBackend({ url: server.url, token: server.token });
  const transcripts: EpisodeTranscript[] = [];
  const deps = runnerDeps(net, port, functions, { sandboxes: { backend, ledger }, transcripts: { save: async (r) => void transcripts.push(r) } });
  // a run of its own each time: a sandbox id is never made twice, not even across tests on one server
  const msg = episodeMessage(countdownTask(0), { runId: `run-sandbox-${++runs}`, ...(o.sandbox === false ? {} : { sandbox: EpisodeSandboxConfig.parse({ maxLive: 8 }) }), ...(o.episodeType ? { episodeType: o.episodeType } : {}) }, deps.now());
  const result = await runEpisode(msg, deps);
  return { net, port, ledger, result, transcripts };
}

describe("episodes with a sandbox", () => {
  it("the program runs in the sandbox, the reward is posted, and the sandbox is destroyed before the invocation ends", async () => {
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        const sb = await ctx.sandbox();
        await sb.files.write("main.py", "print(2 + 3)\n");
        const out = await sb.commands.run("python3 main.py");
        return { reward: out.stdout.trim() === "5" ? 1 : 0 };
      }),
    );
    expect(r.result).toMatchObject({ kind: "reported", result: "ended", outcome: { kind: "end", reward: 1 } });
    expect(r.net.to("/end_episode")).toHaveLength(1);
    const rows = [...r.ledger.rows.values()];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ end: "destroyed", commands: 2, backend: "local" });
    expect(await listLocalSandboxes({ url: server.url, token: server.token })).toEqual([]);
    const calls = r.transcripts[0]?.sandbox ?? [];
    expect(calls.map((c) => c.op)).toEqual(["create", "write", "command", "destroy"]);
    expect(calls[2]).toMatchObject({ input: "python3 main.py", exitCode: 0, stdout: "5\n", timedOut: false });
  });

  it("a sandbox failure the function swallows still aborts the attempt (sandbox_failure): no end, no reward", async () => {
    const dying: SandboxBackend = { ...localSandboxBackend({ url: server.url, token: server.token }), exec: async () => Promise.reject(new SandboxError("infrastructure", "sandbox died", { code: "sandbox_not_found" })) };
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        const sb = await ctx.sandbox();
        const out = await sb.commands.run("python3 main.py").catch(() => null);
        return { reward: out ? 1 : 0 }; // a function that scores the failure as a wrong answer
      }),
      { backend: dying },
    );
    expect(r.result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: AbortCause.sandboxFailure } });
    expect(methodsOf(r.port.calls)).toEqual(["episodeClaimed", "episodeOutcomeRecorded", "episodeReported"]);
    expect(r.net.to("/end_episode")).toHaveLength(0);
    expect(r.net.to("/abort_episode")).toHaveLength(1);
    expect(isRetryableCause(AbortCause.sandboxFailure)).toBe(true);
    expect([...r.ledger.rows.values()][0]).toMatchObject({ end: "destroyed", failure: expect.stringContaining("sandbox died") });
  });

  it("an eval episode whose sandbox failed is aborted, not scored", async () => {
    const refusing: SandboxBackend = { ...localSandboxBackend({ url: server.url, token: server.token }), create: async () => Promise.reject(new SandboxError("infrastructure", "create refused", { retryable: true })) };
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        await ctx.sandbox().catch(() => undefined);
        return { reward: 0 };
      }),
      { backend: refusing, episodeType: "eval" },
    );
    expect(r.result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: AbortCause.sandboxFailure } });
    expect([...r.ledger.rows.values()][0]).toMatchObject({ end: "create_failed" });
  });

  it("a function that asks for a sandbox in a run without one is aborted as sandbox_disabled, which is never retried", async () => {
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        await ctx.sandbox();
        return { reward: 1 };
      }),
      { sandbox: false },
    );
    expect(r.result).toMatchObject({ kind: "reported", result: "aborted", outcome: { kind: "abort", cause: AbortCause.sandboxDisabled } });
    expect(isRetryableCause(AbortCause.sandboxDisabled)).toBe(false);
    expect(r.ledger.rows.size).toBe(0);
  });

  it("a function that never asks for a sandbox pays nothing: no ledger row, no sandbox, no transcript entry", async () => {
    const r = await run(
      fn(async (ctx) => {
        await askOnce(ctx);
        return { reward: 1 };
      }),
    );
    expect(r.result).toMatchObject({ kind: "reported", result: "ended" });
    expect(r.ledger.rows.size).toBe(0);
    expect(r.transcripts[0]?.sandbox).toBeUndefined();
  });
});
