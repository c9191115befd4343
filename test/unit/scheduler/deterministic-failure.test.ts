/**
 * A plain bug in a function (the same error on the first attempts) stops the run early with the first failure's
 * detail (name, message, file:line) in its status, instead of retrying every task `maxAttempts` times; different
 * errors, or a run that already ended episodes, keep going.
 */
import { describe, expect, it } from "vitest";
import { DETERMINISTIC_FAILURE_ATTEMPTS } from "../../../src/scheduler/failure-streak.ts";
import { runStatus } from "../../../src/scheduler/index.ts";
import { failureDetail } from "../../../src/runtime/outcome.ts";
import { rollingRun, specInput } from "./harness.ts";

const BUG = "TypeError: Cannot read properties of undefined (reading 'x') @ run functions/my-agent.ts:12:7";

function failWith(h: ReturnType<typeof rollingRun>["h"], ref: { episodeKey: string; attempt: number; dispatchId: number }, detail: string) {
  h.claim(ref);
  h.outcome(ref, { kind: "abort", cause: "function_error", detail });
  h.report(ref, "aborted");
}

describe("deterministic function errors", () => {
  it(`the same function_error on the first ${DETERMINISTIC_FAILURE_ATTEMPTS} attempts, a retry among them, drains the run with stopReason functionError and the first failure's detail`, () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 2, maxParallel: 2 }));
    failWith(h, sent[0]!, BUG);
    failWith(h, sent[1]!, BUG);
    expect(h.state.run.stopReason).toBeNull(); // two first attempts: it may be bad luck
    const retry = h.takeDispatches().find((d) => d.attempt === 2)!;
    failWith(h, retry, BUG); // the retry fails the same way: a plain bug
    const status = runStatus(h.state);
    expect(status.stopReason).toBe("functionError");
    expect(status.phase === "draining" || status.phase === "finished").toBe(true);
    expect(status.firstFailure).toMatchObject({ cause: "function_error", detail: BUG });
    expect(h.commands.some((c) => c.type === "log" && c.message.includes("failed the same way"))).toBe(true);
  });

  it("different errors, or a run that already ended an episode, are not stopped", () => {
    const a = rollingRun(specInput({ batchSize: 2, numRepeat: 2 }));
    a.sent.slice(0, 3).forEach((d, i) => failWith(a.h, d, `Error: flaky ${i % 2} @ run functions/x.ts:${i % 2}:1`));
    expect(a.h.state.run.stopReason).toBeNull();

    const b = rollingRun(specInput({ batchSize: 2, numRepeat: 2 }));
    b.h.finishEpisode(b.sent[0]!, 1);
    b.sent.slice(1, 4).forEach((d) => failWith(b.h, d, BUG));
    expect(b.h.state.run.stopReason).toBeNull();

    // the same error on first attempts only (a function failing on some episodes, whose retries pass): not stopped
    const c = rollingRun(specInput({ batchSize: 2, numRepeat: 4 }));
    c.sent.slice(0, DETERMINISTIC_FAILURE_ATTEMPTS + 1).forEach((d) => failWith(c.h, d, BUG));
    expect(c.h.state.run.stopReason).toBeNull();
    expect(runStatus(b.h.state).firstFailure?.detail).toBe(BUG);
  });

  it("an end recorded but not yet reported keeps the run going: its reward may already be on the server", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 4 }));
    h.claim(sent[0]!);
    h.outcome(sent[0]!, { kind: "end", reward: 1 }); // recorded; /end_episode in flight
    sent.slice(1, DETERMINISTIC_FAILURE_ATTEMPTS).forEach((d) => failWith(h, d, BUG));
    failWith(h, h.takeDispatches().find((d) => d.attempt === 2)!, BUG);
    expect(h.state.run.stopReason).toBeNull();
    h.report(sent[0]!, "ended");
    expect(h.state.run.totals.episodesEnded).toBe(1);
  });

  it("after a stop on a function error an end is refused (stale: the consumer aborts), so no reward lands in a batch that never trains", () => {
    const { h, sent } = rollingRun(specInput({ batchSize: 2, numRepeat: 4 }));
    const late = sent[DETERMINISTIC_FAILURE_ATTEMPTS]!;
    h.claim(late);
    sent.slice(0, DETERMINISTIC_FAILURE_ATTEMPTS - 1).forEach((d) => failWith(h, d, BUG));
    failWith(h, h.takeDispatches().find((d) => d.attempt === 2)!, BUG);
    expect(h.state.run).toMatchObject({ phase: "draining", stopReason: "functionError" });
    expect(h.outcome(late, { kind: "end", reward: 1 }).ack).toMatchObject({ status: "stale" });
    expect(h.state.run.totals.episodesEnded).toBe(0);
    expect(h.state.run.failuresByCause["run_stopped"]).toBe(1);
  });

  it("failureDetail names the error and its first frames as file:line", () => {
    const err = new Error("a bug in the function");
    err.stack = "Error: a bug in the function\n    at run (file:///app/functions/my-agent.ts:12:7)\n    at node:internal/process/task_queues:95:5";
    expect(failureDetail(err)).toBe("Error: a bug in the function @ run functions/my-agent.ts:12:7");
    expect(failureDetail("plain")).toBe("plain");
  });
});
