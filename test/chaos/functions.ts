/**
 * @module test/chaos/functions — rollout functions that misbehave on purpose, for the chaos suite's Worker: on
 * about a third of the episodes (chosen by the server's episode uuid, so the retry of the same repeat usually
 * behaves) they throw, hang ignoring `ctx.signal`, or return NaN; otherwise they play Countdown. `chaos-slow` plays
 * Countdown after a pause, so episodes are mid-run when a consumer is killed; `chaos-tail` pauses only about one
 * episode in five, for 30 s (a heavy tail, for over-provisioning). `chaos-sandbox` and
 * `chaos-sandbox-slow` run a program in the attempt's sandbox, then play Countdown, swallowing any sandbox failure
 * into a marker reward the runtime must never let through. `chaos-hooked` plays Countdown with a weight-sync hook
 * that is slow, fails, then hangs.
 */
import countdown from "../../functions/countdown.ts";
import { defineRolloutFunction, type RolloutFunction } from "../../src/sdk/contract.ts";

/** A stable pick of about `share` of the episodes, from the episode uuid. */
function picked(uuid: string, share: number): boolean {
  let h = 0;
  for (let i = 0; i < uuid.length; i++) h = (h * 31 + uuid.charCodeAt(i)) >>> 0;
  return (h % 1000) / 1000 < share;
}

function misbehaving(name: string, act: (uuid: string) => Promise<never> | never | { reward: number }): RolloutFunction {
  return defineRolloutFunction({
    name,
    async run(task, ctx) {
      const uuid = Object.values(ctx.episodes)[0]?.episodeUuid ?? "";
      if (!picked(uuid, 0.35)) return countdown.run(task, ctx);
      await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });
      return act(uuid);
    },
  });
}

/** A number from the episode uuid (the transient error's text differs per episode, as a flaky tool's does). */
function callNumber(uuid: string): number {
  let h = 7;
  for (let i = 0; i < uuid.length; i++) h = (h * 131 + uuid.charCodeAt(i)) >>> 0;
  return h % 100_000;
}

/**
 * Countdown after a pause of `ms` (cut short by `ctx.signal`): every episode is mid-run for a while, so a consumer
 * killed then dies holding its claim.
 */
function slow(name: string, ms: number): RolloutFunction {
  return defineRolloutFunction({
    name,
    async run(task, ctx) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        ctx.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      return countdown.run(task, ctx);
    },
  });
}

/**
 * A heavy tail (over-provisioning, issue 23 §2): about `share` of the episodes (by the server's episode uuid, so a
 * re-run of the same task draws again) pause `ms` before playing Countdown, the others play at once. The pause ends
 * early when `ctx.signal` fires (a cut extra, a stop): the function then throws the stop's reason, so the runtime
 * gives the claim back.
 */
function tailed(name: string, share: number, ms: number): RolloutFunction {
  return defineRolloutFunction({
    name,
    async run(task, ctx) {
      const uuid = Object.values(ctx.episodes)[0]?.episodeUuid ?? "";
      if (picked(uuid, share)) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          ctx.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
        });
        if (ctx.signal.aborted) throw ctx.signal.reason;
      }
      return countdown.run(task, ctx);
    },
  });
}

/**
 * The reward a sandbox function posts when its sandbox failed (it swallows the error on purpose, as a careless
 * function would): the runtime must turn that attempt into an abort, so this value never reaches the server.
 */
export const SANDBOX_FAILURE_REWARD = -99;

/**
 * A Python program in the attempt's sandbox that runs `seconds` (so episodes are mid-command when a process is
 * killed), then Countdown (its LLM calls happen whatever the sandbox did, so the episode is not refused for making
 * none); a sandbox failure is swallowed and posted as {@link SANDBOX_FAILURE_REWARD}.
 */
function sandboxed(name: string, seconds: number): RolloutFunction {
  return defineRolloutFunction({
    name,
    sandbox: true,
    async run(task, ctx) {
      let failed = false;
      try {
        const sb = await ctx.sandbox();
        await sb.files.write("work.py", `import time\ntime.sleep(${seconds})\nprint("done")\n`);
        const r = await sb.commands.run("python3 work.py");
        failed = r.stdout.trim() !== "done";
      } catch {
        failed = true;
      }
      const out = await countdown.run(task, ctx);
      return failed ? { reward: SANDBOX_FAILURE_REWARD } : out;
    },
  });
}

/**
 * On about a third of the episodes: makes its sandbox, starts a long command, then never returns and ignores
 * `ctx.signal` — the runtime stops it at the idle deadline, aborts the attempt and the repeat runs again (with a
 * fresh sandbox); the others behave as `chaos-sandbox`.
 */
function sandboxThenHang(name: string): RolloutFunction {
  const normal = sandboxed(name, 0.5);
  return defineRolloutFunction({
    name,
    sandbox: true,
    async run(task, ctx) {
      const uuid = Object.values(ctx.episodes)[0]?.episodeUuid ?? "";
      if (!picked(uuid, 0.35)) return normal.run(task, ctx);
      await ctx.llm.chat.completions.create({ model: ctx.model, messages: [{ role: "user", content: "What is 2 + 3?" }] });
      const sb = await ctx.sandbox();
      void sb.commands.run("sleep 600").catch(() => undefined);
      return new Promise<never>(() => undefined);
    },
  });
}

/** The step at which `chaos-hooked`'s `onWeightSync` throws. */
export const HOOK_FAILS_AT_STEP = 2;
/** From this step on `chaos-hooked`'s `onWeightSync` never resolves (past the run's 10 s bound: logged as slow). */
export const HOOK_HANGS_FROM_STEP = 3;
/** How long `chaos-hooked`'s `onWeightSync` takes at the other steps, ms (it outlives the call that started it). */
export const HOOK_DELAY_MS = 3_000;

/**
 * Countdown, with a weight-sync hook that checks its arguments (a step ≥ 1 and the run's metrics, or it throws
 * "bad arguments"), takes {@link HOOK_DELAY_MS} at step 1, throws at {@link HOOK_FAILS_AT_STEP} and never resolves
 * from {@link HOOK_HANGS_FROM_STEP} on: the run must log each, once per step, and train on regardless.
 */
function hooked(name: string): RolloutFunction {
  return defineRolloutFunction({
    name,
    run: (task, ctx) => countdown.run(task, ctx),
    async onWeightSync(step, metrics) {
      const ok = Number.isInteger(step) && step >= 1 && Number.isInteger(metrics?.episodes) && metrics.episodes >= 1 && Number.isInteger(metrics.windows) && metrics.windows >= 1 &&
        (metrics.meanReward === null || Number.isFinite(metrics.meanReward)) && Number.isInteger(metrics.otherClientsEpisodes);
      if (!ok) throw new Error(`bad arguments: ${JSON.stringify([step, metrics])}`);
      if (step === HOOK_FAILS_AT_STEP) throw new Error(`the hook fails on purpose at step ${step}`);
      if (step >= HOOK_HANGS_FROM_STEP) return new Promise<void>(() => undefined);
      await new Promise((r) => setTimeout(r, HOOK_DELAY_MS));
    },
  });
}

/**
 * A long agent for the handover rows (docs/design/long-episodes.md): `turns` chat calls, each one carrying the whole
 * conversation so far (so a replay that drifted would send a request the journal does not hold), then Countdown's
 * call and reward. Deterministic given its answers: nothing but the task and the answers shapes a request, and it
 * waits only in its LLM calls (the emulator's latency), so a later holder's replay costs no time.
 */
function longAgent(name: string, turns: number, stream = false): RolloutFunction {
  return defineRolloutFunction({
    name,
    async run(task, ctx) {
      const messages: Array<{ role: "user" | "assistant"; content: string }> = [{ role: "user", content: `Think about this puzzle for a while: ${task.main_query ?? task.task_id}` }];
      for (let turn = 1; turn <= turns; turn++) {
        let content = "";
        if (stream) {
          // streamed: the answer's connection stays open (keepalives) for the whole call
          for await (const chunk of await ctx.llm.chat.completions.create({ model: ctx.model, messages, stream: true })) content += chunk.choices[0]?.delta?.content ?? "";
        } else {
          content = (await ctx.llm.chat.completions.create({ model: ctx.model, messages })).choices[0]?.message.content ?? "";
        }
        messages.push({ role: "assistant", content }, { role: "user", content: `Turn ${turn + 1} of ${turns + 1}: go on.` });
      }
      return countdown.run(task, ctx);
    },
  });
}

/** The chaos functions by name. */
export const chaosFunctions: Record<string, RolloutFunction> = {
  // transient errors whose text varies (a flaky tool): not a plain bug, so the run must not stop on them (a plain
  // bug, the same error on every attempt and its retry, stops the run: test/unit/scheduler/deterministic-failure.test.ts)
  "chaos-throws": misbehaving("chaos-throws", (uuid) => {
    throw new Error(`a flaky tool failed on call ${callNumber(uuid)}`);
  }),
  "chaos-hangs": misbehaving("chaos-hangs", () => new Promise<never>(() => undefined)),
  "chaos-nan": misbehaving("chaos-nan", () => ({ reward: Number.NaN })),
  "chaos-slow": slow("chaos-slow", 4_000),
  "chaos-tail": tailed("chaos-tail", 0.2, 30_000),
  "chaos-sandbox": sandboxed("chaos-sandbox", 0.5),
  "chaos-sandbox-slow": sandboxed("chaos-sandbox-slow", 4),
  "chaos-sandbox-hangs": sandboxThenHang("chaos-sandbox-hangs"),
  "chaos-hooked": hooked("chaos-hooked"),
  // 31 LLM calls: 93 s at 3 s per call
  "chaos-long": longAgent("chaos-long", 30),
  // 11 LLM calls: 33 s at 3 s per call, past a 20 s consumer wall
  "chaos-long-short": longAgent("chaos-long-short", 10),
  // 6 streamed calls, then Countdown's: 49 s at 7 s per call, past a 40 s consumer wall
  "chaos-long-call": longAgent("chaos-long-call", 6, true),
};
