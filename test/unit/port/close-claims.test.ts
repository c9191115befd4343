/**
 * The port's rules for giving claims back (port/close-claims): how the server's answers on several swarms add up to
 * one reported result, when an end is a resend, how aborts are retried; with fake closers so every order of answers
 * is checked exactly. Also the port's small shared rules (retryable causes, which server a swarm name runs on).
 */
import { describe, expect, it, vi } from "vitest";
import { assertValidWorkflowOutput } from "../../../src/protocol/index.ts";
import { AbortCause, abortAll, endAll, isRetryableCause, requestReachedServer, serverOfSwarm, type ClaimCloser, type ClaimHandle, type EndAnswer } from "../../../src/port/index.ts";

const OUTPUT = assertValidWorkflowOutput({ reward: 1 });
const EXPIRED: EndAnswer = { kind: "expired", reason: "notClaimed" };
const LOST: EndAnswer = { kind: "lost", reason: "weightSyncing" };
const ENDED: EndAnswer = { kind: "ended" };

/** A closer that answers every end with `answer` and records the ends it was sent. */
function closer(answer: EndAnswer): ClaimCloser & { ends: string[] } {
  const ends: string[] = [];
  return {
    ends,
    endEpisode: async (_taskId, episodeUuid) => {
      ends.push(episodeUuid);
      return answer;
    },
    abortEpisode: async () => true,
  };
}

function claims(...answers: EndAnswer[]): Array<ClaimHandle & { client: ReturnType<typeof closer> }> {
  return answers.map((a, i) => ({ swarm: `s${i}`, episodeUuid: `u${i}`, client: closer(a) }));
}
const outputsFor = (cs: readonly ClaimHandle[]) => Object.fromEntries(cs.map((c) => [c.swarm, OUTPUT]));

describe("endAll across swarms", () => {
  for (const [label, answers] of [
    ["lost on the first swarm, expired on the second", [LOST, EXPIRED]],
    ["expired on the first swarm, lost on the second", [EXPIRED, LOST]],
    ["ended, lost, expired", [ENDED, LOST, EXPIRED]],
  ] as const) {
    it(`expired wins over lost (${label}): reported expired with the expiry's reason, every claim sent its end once`, async () => {
      const cs = claims(...answers);
      const accepted = (answers as readonly EndAnswer[]).includes(ENDED) ? { endedSwarms: ["s0"] } : {};
      expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "expired", cause: "expired:notClaimed", ...accepted });
      for (const c of cs) expect(c.client.ends).toEqual([c.episodeUuid]);
    });
  }

  it("lost and ended: reported lost with the loss's reason, naming the swarm whose server accepted its reward", async () => {
    const cs = claims(ENDED, LOST);
    expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "lost", cause: "lost:weightSyncing", endedSwarms: ["s0"] });
  });

  it("ended everywhere: reported ended, no cause", async () => {
    const cs = claims(ENDED, ENDED);
    expect(await endAll(cs, "task-1", outputsFor(cs))).toEqual({ kind: "sent", result: "ended", cause: undefined });
  });
});

describe("endAll: what is sent, and when the outcome stays unknown", () => {
  /** A closer whose ends throw `failures` times (a transport error), then answer `answer`; it records every send. */
  function flaky(failures: number, answer: EndAnswer = ENDED) {
    const sends: { episodeUuid: string; isResend: boolean }[] = [];
    let left = failures;
    const client: ClaimCloser = {
      endEpisode: async (_taskId, episodeUuid, _output, { isResend }) => {
        sends.push({ episodeUuid, isResend });
        if (left-- > 0) throw new Error("socket hang up");
        return answer;
      },
      abortEpisode: async () => true,
    };
    return { client, sends };
  }

  it("BC-26 a first send is not a resend; after a transport error the end goes once more as a resend", async () => {
    const a = flaky(0);
    expect(await endAll([{ swarm: "s0", episodeUuid: "u0", client: a.client }], "t", { s0: OUTPUT })).toEqual({ kind: "sent", result: "ended", cause: undefined });
    expect(a.sends).toEqual([{ episodeUuid: "u0", isResend: false }]);
    const b = flaky(1);
    expect(await endAll([{ swarm: "s0", episodeUuid: "u0", client: b.client }], "t", { s0: OUTPUT })).toMatchObject({ kind: "sent", result: "ended" });
    expect(b.sends).toEqual([{ episodeUuid: "u0", isResend: false }, { episodeUuid: "u0", isResend: true }]);
    const c = flaky(0);
    await endAll([{ swarm: "s0", episodeUuid: "u0", client: c.client }], "t", { s0: OUTPUT }, true); // from the outbox
    expect(c.sends).toEqual([{ episodeUuid: "u0", isResend: true }]);
  });

  it("BC-33 an outcome still unknown after the resend is unresolved, naming each swarm and its error; the other swarms are ended all the same", async () => {
    const [a, b, c] = [flaky(2), flaky(0), flaky(2)];
    const result = await endAll(
      [{ swarm: "s0", episodeUuid: "u0", client: a.client }, { swarm: "s1", episodeUuid: "u1", client: b.client }, { swarm: "s2", episodeUuid: "u2", client: c.client }],
      "t",
      { s0: OUTPUT, s1: OUTPUT, s2: OUTPUT },
    );
    expect(result).toEqual({ kind: "unresolved", reason: "end_episode outcome unknown on 's0': socket hang up; end_episode outcome unknown on 's2': socket hang up", reached: true });
    expect(b.sends).toHaveLength(1);
  });

  it("issue 25: a resend refused 'not rolling' after a lost answer is unknown, never lost (the first send may have closed the batch)", async () => {
    const a = flaky(1, LOST);
    const result = await endAll([{ swarm: "s0", episodeUuid: "u0", client: a.client }], "t", { s0: OUTPUT });
    expect(result).toMatchObject({ kind: "unresolved", reached: true });
    expect(a.sends).toEqual([{ episodeUuid: "u0", isResend: false }, { episodeUuid: "u0", isResend: true }]);
    // from the outbox (the first send was the consumer's): unknown too, and whether it reached the server is not known here
    const b = flaky(0, LOST);
    expect(await endAll([{ swarm: "s0", episodeUuid: "u0", client: b.client }], "t", { s0: OUTPUT }, true)).toMatchObject({ kind: "unresolved", reached: false });
    // a first send answered 'not rolling' is a refusal the server made: lost
    const c = flaky(0, LOST);
    expect(await endAll([{ swarm: "s0", episodeUuid: "u0", client: c.client }], "t", { s0: OUTPUT })).toEqual({ kind: "sent", result: "lost", cause: "lost:weightSyncing" });
  });

  it("issue 25: a first send that may never have reached the server (a refused connection), then a resend refused 'not rolling': unknown, and not known to have reached", async () => {
    const sends: boolean[] = [];
    const client: ClaimCloser = {
      endEpisode: async (_t, _u, _o, { isResend }) => {
        sends.push(isResend);
        if (!isResend) throw new Error("fetch failed", { cause: { message: "connect ECONNREFUSED 127.0.0.1:1", code: "ECONNREFUSED" } });
        return LOST;
      },
      abortEpisode: async () => true,
    };
    const result = await endAll([{ swarm: "s0", episodeUuid: "u0", client }], "t", { s0: OUTPUT });
    expect(result).toMatchObject({ kind: "unresolved", reached: false });
    expect(result.kind === "unresolved" && result.reason).toMatch(/^end_episode resend on 's0' refused \(weightSyncing\).*outcome unknown$/);
    expect(sends).toEqual([false, true]);
  });

  it("issue 25: what a failed send's error says about reaching the server, case by case", () => {
    // not an error object at all: nothing is known
    for (const e of [null, undefined, "socket hang up", 500]) expect(requestReachedServer(e)).toBe(false);
    // an HTTP answer: only the server's own 5xx; a 4xx is not a failed send the server acted on
    expect(requestReachedServer({ status: 404, body: "Not Found" })).toBe(false);
    expect(requestReachedServer({ status: 500, body: "" })).toBe(true); // the server's own error, even without a body
    expect(requestReachedServer({ status: 500 })).toBe(true);
    expect(requestReachedServer({ status: 501, body: "" })).toBe(true);
    expect(requestReachedServer({ status: 505, body: "" })).toBe(true);
    // a gateway's bodiless 502–504 (or whitespace only) may come from a proxy that never forwarded the request
    for (const status of [502, 503, 504]) {
      expect(requestReachedServer({ status, body: "" })).toBe(false);
      expect(requestReachedServer({ status, body: "  \n" })).toBe(false);
      expect(requestReachedServer({ status, body: "upstream said: worker busy" })).toBe(true);
    }
    // no body and no detail at all: a bodiless gateway answer too
    expect(requestReachedServer({ status: 502 })).toBe(false);
    expect(requestReachedServer({ status: 504, body: null, detail: 42 })).toBe(false);
    // the body wins over the detail; without a body, the detail is read
    expect(requestReachedServer({ status: 502, body: "<!DOCTYPE html><html>Bad Gateway</html>", detail: "Bad Gateway" })).toBe(false);
    expect(requestReachedServer({ status: 502, body: "engine error", detail: "<html>proxy</html>" })).toBe(true);
    expect(requestReachedServer({ status: 502, detail: "<html><body>Bad Gateway</body></html>" })).toBe(false);
    expect(requestReachedServer({ status: 502, detail: "engine error" })).toBe(true);
    // a connection dropped after the request was written, named only by the cause's code
    expect(requestReachedServer(new Error("fetch failed", { cause: { code: "ECONNRESET" } }))).toBe(true);
    expect(requestReachedServer(new Error("fetch failed", { cause: { code: "ENOTFOUND" } }))).toBe(false);
  });

  it("issue 25: whether a failed send reached the server: its own 5xx or a dropped connection did; a gateway's HTML page, a refused connection or a timeout may not have", () => {
    expect(requestReachedServer({ status: 500, detail: "Internal Server Error", body: "Internal Server Error" })).toBe(true);
    expect(requestReachedServer({ status: 502, detail: "<html><body>Bad Gateway</body></html>", body: "<html><body>Bad Gateway</body></html>" })).toBe(false);
    expect(requestReachedServer({ status: 503, detail: "", body: "" })).toBe(false);
    expect(requestReachedServer(new Error("fetch failed", { cause: { message: "other side closed", code: "UND_ERR_SOCKET" } }))).toBe(true);
    expect(requestReachedServer(new Error("Network connection lost."))).toBe(true); // workerd's fetch
    expect(requestReachedServer(new Error("swarm server request failed", { cause: { message: "Network connection lost." } }))).toBe(true);
    expect(requestReachedServer(new Error("fetch failed", { cause: { message: "connect ECONNREFUSED 127.0.0.1:1", code: "ECONNREFUSED" } }))).toBe(false);
    expect(requestReachedServer(new Error("The operation was aborted due to timeout"))).toBe(false);
  });

  it("a claim without a recorded output for its swarm is unresolved (nothing is sent with another swarm's reward)", async () => {
    const a = flaky(0);
    expect(await endAll([{ swarm: "s0", episodeUuid: "u0", client: a.client }], "t", { other: OUTPUT })).toEqual({ kind: "unresolved", reason: "no recorded output for swarm 's0'" });
    expect(a.sends).toEqual([]);
  });

  it("an end the client gave up locally (the episode's lifetime ran out) is reported aborted with lifetime_exceeded, never lost", async () => {
    const cs = claims({ kind: "abortedLocally" });
    expect(await endAll(cs, "t", outputsFor(cs))).toEqual({ kind: "sent", result: "aborted", cause: AbortCause.lifetimeExceeded });
  });
});

describe("abortAll: three tries, then the claim is reported unconfirmed", () => {
  function aborter(answers: (boolean | Error)[]) {
    const calls: { episodeUuid: string; options: unknown }[] = [];
    const client: ClaimCloser = {
      endEpisode: async () => ENDED,
      abortEpisode: async (episodeUuid, options) => {
        calls.push({ episodeUuid, options });
        const a = answers.shift() ?? false;
        if (a instanceof Error) throw a;
        return a;
      },
    };
    return { client, calls };
  }

  it("an abort that throws or answers false is tried again after 500 ms and 1,500 ms of the real clock, and reported unconfirmed after the third", async () => {
    vi.useFakeTimers();
    try {
      const a = aborter([new Error("ECONNRESET"), false, false]);
      const done = abortAll([{ swarm: "s0", episodeUuid: "u0", client: a.client }]);
      await vi.advanceTimersByTimeAsync(499);
      expect(a.calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(a.calls).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1_499);
      expect(a.calls).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1);
      expect((await done).map((c) => c.episodeUuid)).toEqual(["u0"]);
      expect(a.calls).toHaveLength(3);
      // each abort asks the client to stay quiet (the caller reports what stays unconfirmed)
      expect(a.calls.every((c) => JSON.stringify(c.options) === JSON.stringify({ quiet: true }))).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("an abort confirmed on a retry is not reported; a throw is never taken as a confirmation", async () => {
    const ok = aborter([new Error("ECONNRESET"), true]);
    const never = aborter([new Error("a"), new Error("b"), new Error("c")]);
    const pending = await abortAll(
      [{ swarm: "s0", episodeUuid: "u0", client: ok.client }, { swarm: "s1", episodeUuid: "u1", client: never.client }],
      async () => {},
    );
    expect(pending.map((c) => c.episodeUuid)).toEqual(["u1"]);
    expect(ok.calls).toHaveLength(2);
    expect(never.calls).toHaveLength(3);
  });
});

describe("the port's small rules", () => {
  it("BC-32 only a data or configuration error is not retried: invalid_task and judge_misconfigured", () => {
    expect(isRetryableCause(AbortCause.invalidTask)).toBe(false);
    expect(isRetryableCause(AbortCause.judgeMisconfigured)).toBe(false);
    for (const cause of [AbortCause.expired, AbortCause.lost, AbortCause.leaseExpired, "function_error", "my_own_reason"]) expect(isRetryableCause(cause)).toBe(true);
  });

  it("a swarm name runs on the server of that name; only 'default' falls back to the first server", () => {
    const servers = [{ name: "a" }, { name: "b" }];
    expect(serverOfSwarm("b", servers)).toBe(servers[1]);
    expect(serverOfSwarm("default", servers)).toBe(servers[0]);
    expect(serverOfSwarm("c", servers)).toBeUndefined();
    expect(serverOfSwarm("default", [{ name: "x" }, { name: "default" }])?.name).toBe("default");
  });
});
