/**
 * @module sandbox/testing — a sandbox for a function's tests (`createTestContext({ sandbox: t.get })`): one attempt's
 * scope over any backend (a local sandbox server's client, say), with a ledger in memory. Platform-free.
 */
import { EpisodeSandboxConfig, type SandboxRunConfigInput } from "../port/sandbox.ts";
import { attemptSandboxes, type AttemptSandboxes } from "./attempt.ts";
import type { SandboxBackend } from "./backend.ts";
import { MemorySandboxLedger } from "./memory-ledger.ts";
import type { SandboxCallRecord } from "./session.ts";

let tests = 0;

/** What {@link testSandbox} gives: `get` for `ctx.sandbox`, the calls made, and `close` (destroys it). */
export interface TestSandbox extends AttemptSandboxes {
  /** every sandbox call, as the transcript would list it */
  readonly calls: SandboxCallRecord[];
  readonly ledger: MemorySandboxLedger;
}

/**
 * One attempt's sandbox over `backend` for a test: a fresh id per call of this function, the run's `sandbox`
 * block from `config` (default `{}`), `secrets` as the run's secrets. Call `close()` when the test is done.
 */
export function testSandbox(backend: SandboxBackend, options: { config?: SandboxRunConfigInput; secrets?: Record<string, string> } = {}): TestSandbox {
  const calls: SandboxCallRecord[] = [];
  const config = EpisodeSandboxConfig.parse({ maxLive: 8, ...(options.config ?? {}) });
  const ledger = new MemorySandboxLedger({ maxLive: config.maxLive, createsPerSecond: config.createsPerSecond });
  const scope = attemptSandboxes({
    provider: { backend, ledger },
    config,
    runId: `test-${Date.now().toString(36)}-${++tests}-${Math.floor(Math.random() * 1e9).toString(36)}`,
    episodeKey: "test/0/0#0",
    attempt: 1,
    dispatchId: 1,
    discardEpisodeTimeoutSeconds: 240,
    secrets: options.secrets ?? {},
    episodeKeys: [],
    signal: new AbortController().signal,
    now: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    random: Math.random,
    record: (r) => calls.push(r),
    log: { warn: () => undefined, info: () => undefined },
  });
  return { ...scope, calls, ledger };
}
