/**
 * @module sandbox/local-server/run-command — one command of a sandbox: spawns it (sandbox/local-server/processes:
 * own process group, resource limits), streams its output, kills its whole process group at the timeout, at the
 * output cap or on abort, and reads a code run's `{result, error}` from its result pipe.
 */
import type { Readable } from "node:stream";
import { killGroup, spawnLimited, type ProcessLimits } from "./processes.ts";
import { LocalSandboxError, type Box, type RunOutcome, type RunRequest } from "./sandbox-types.ts";

/** Where and how a command runs. */
export interface RunPlace {
  /** absolute working directory (inside the sandbox's workdir) */
  cwd: string;
  /** the whole environment of the process (nothing inherited) */
  env: Record<string, string>;
  limits: ProcessLimits;
}

/**
 * Runs `sh -c script` for `box` (its process group joins `box.groups`, `box.running` counts it while it runs): the
 * output streams to `req.onOutput`; the timeout (`req.timeoutMs`, milliseconds), the output cap
 * (`req.maxOutputBytes`) and `req.signal` kill its process group. With `code`, fd 3 carries the interpreter's
 * `{result, error}` JSON.
 * @throws LocalSandboxError 503 `spawn_failed` when the process cannot start
 */
export function runInBox(box: Box, script: string, place: RunPlace, req: RunRequest, code: boolean): Promise<RunOutcome> {
  const { cwd, env, limits } = place;
  const started = Date.now();
  let child: ReturnType<typeof spawnLimited>;
  try {
    child = spawnLimited(script, { cwd, env, limits, resultPipe: code });
  } catch (err) {
    throw new LocalSandboxError(503, "spawn_failed", `could not start the command: ${(err as Error).message}`);
  }
  const pgid = child.pid;
  if (pgid !== undefined) box.groups.add(pgid);
  req.onStart?.();
  box.running++;
  let bytes = 0;
  let capped = false;
  let timedOut = false;
  const stop = () => {
    if (pgid !== undefined) killGroup(pgid, "SIGKILL");
  };
  const onData = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
    if (capped) return;
    const room = req.maxOutputBytes - bytes;
    if (chunk.length > room) {
      capped = true;
      if (room > 0) req.onOutput?.({ stream, data: chunk.subarray(0, room).toString("utf8") });
      bytes = req.maxOutputBytes;
      stop();
      return;
    }
    bytes += chunk.length;
    req.onOutput?.({ stream, data: chunk.toString("utf8") });
  };
  child.stdout?.on("data", onData("stdout"));
  child.stderr?.on("data", onData("stderr"));
  let resultText = "";
  const resultPipe = code ? (child.stdio[3] as Readable | null) : null;
  resultPipe?.setEncoding("utf8");
  resultPipe?.on("data", (d: string) => {
    if (resultText.length < 1024 * 1024) resultText += d;
  });
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, req.timeoutMs);
  const onAbort = () => stop();
  req.signal?.addEventListener("abort", onAbort, { once: true });
  return new Promise<RunOutcome>((resolveRun, rejectRun) => {
    let exitCode: number | null = null;
    const finish = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
      box.running--;
      const outcome: RunOutcome = { exitCode: timedOut || capped ? null : exitCode, timedOut, capped, durationMs: Date.now() - started };
      if (code && !timedOut && !capped) {
        try {
          outcome.code = JSON.parse(resultText) as RunOutcome["code"];
        } catch {
          outcome.code = { result: null, error: exitCode === 0 ? null : { name: "Killed", message: `the interpreter exited with ${describeExit(exitCode, child.signalCode)} before reporting (a memory or CPU limit?)`, traceback: "" } };
        }
      }
      resolveRun(outcome);
    };
    child.once("error", (err) => {
      clearTimeout(timer);
      box.running--;
      rejectRun(new LocalSandboxError(503, "spawn_failed", `could not start the command: ${err.message}`));
    });
    child.once("exit", (codeNum) => {
      exitCode = codeNum;
      // give the pipes a moment to drain; a background child holding them open does not hold the answer
      let done = false;
      const settle = () => {
        if (done) return;
        done = true;
        child.stdout?.destroy();
        child.stderr?.destroy();
        resultPipe?.destroy();
        finish();
      };
      const drained = [child.stdout, child.stderr, resultPipe].filter((s): s is Readable => !!s && !s.readableEnded && !s.destroyed);
      if (drained.length === 0) return settle();
      let open = drained.length;
      for (const s of drained) s.once("close", () => --open === 0 && settle());
      setTimeout(settle, 200).unref?.();
    });
  });
}

function describeExit(code: number | null, signal: string | null): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}
