/**
 * @module edge/run/run-object-parts — the parts of one `RolloutScheduler` instance, built once per wake: its SQLite
 * storage, its datasets, its command runner (with the Worker's outbound rules and the deployment's dispatcher), its
 * sandbox ledger (over the Worker's sandbox backend, for the sweep) and its dashboard with the live feed. The run's loop (edge/run/run-loop.ts) builds them and keeps the state; the parts call
 * back into it through `hooks`.
 */
import { outboundFetch, outboundPolicy } from "../../runtime/outbound.ts";
import { runScopedTaskId } from "../../tasks/index.ts";
import { CommandRunner, type CommandRunnerHost } from "./command-runner.ts";
import { LiveFeed } from "./board/live.ts";
import { RunDashboard, type RunDashboardHost } from "./board/run-dashboard.ts";
import { RunDatasets } from "./datasets.ts";
import { lazyDispatcher } from "./dispatcher.ts";
import type { Env } from "../ground/env.ts";
import { parseOperatorSecrets } from "../ground/secrets.ts";
import { SchedulerStorage } from "./storage.ts";
import { EngineTimeline } from "./engine-timeline.ts";
import { countingDispatcher, type UsageCounter } from "./usage.ts";
import { RunSandboxes } from "./sandboxes.ts";
import { workerSandboxBackend } from "../ground/sandbox-backend.ts";

/** What the parts call back into their run's loop: the runner's callbacks plus what the dashboard reads. */
export type RunObjectHooks = Omit<CommandRunnerHost, "storage" | "datasets" | "dispatcher" | "fetch" | "waitUntil"> & Pick<RunDashboardHost, "view"> & {
  /** the state and meta when a run exists, else null (the dashboard answers null then) */
  current(): { state: ReturnType<CommandRunnerHost["state"]> | null; meta: ReturnType<CommandRunnerHost["meta"]> | null };
};

/** The parts of one run object. */
export interface RunObjectParts {
  storage: SchedulerStorage;
  datasets: RunDatasets;
  commands: CommandRunner;
  dashboard: RunDashboard;
  live: LiveFeed;
  /** the engine statuses the run saw change (the metrics' step time split) */
  timeline: EngineTimeline;
  sandboxes: RunSandboxes;
}

/**
 * Builds the parts of a run object over its storage and bindings (call inside `blockConcurrencyWhile`).
 * @param metered the object's storage as the run's usage counter sees it (edge/run/usage `meteredStorage`)
 */
export function runObjectParts(ctx: DurableObjectState, env: Env, hooks: RunObjectHooks, metered: DurableObjectStorage, usage: UsageCounter): RunObjectParts {
  const storage = new SchedulerStorage(metered.sql);
  const timeline = new EngineTimeline(metered.sql);
  // the same outbound rules as the consumer: allowed hosts only, operator credentials only to their endpoint
  const outbound = outboundFetch((input, init) => globalThis.fetch(input, init), outboundPolicy(env.AJET_ALLOWED_HOSTS, parseOperatorSecrets(env.AJET_SECRETS).secrets));
  // a task read later gets the run-scoped id its inline siblings got when staged
  const scopeId = (taskId: string) => {
    const meta = hooks.meta();
    return runScopedTaskId(taskId, meta.runId, meta.spec.taskIdScope ?? "run");
  };
  const datasets = new RunDatasets(storage, env, outbound as typeof fetch, scopeId);
  const commands = new CommandRunner({
    storage,
    datasets,
    dispatcher: countingDispatcher(lazyDispatcher(env, (ctx as DurableObjectState & { exports?: unknown }).exports), usage),
    meta: () => hooks.meta(),
    state: () => hooks.state(),
    feed: (event, inline) => hooks.feed(event, inline),
    report: (report) => hooks.report(report),
    observeEngine: (swarm, inline, withPool, plan) => hooks.observeEngine(swarm, inline, withPool, plan),
    log: (level, message, fields) => hooks.log(level, message, fields),
    fetch: outbound,
    waitUntil: (promise) => ctx.waitUntil(promise),
    gatewayHeaders: (swarm) => hooks.gatewayHeaders?.(swarm) ?? {},
    finished: () => hooks.finished(),
    fail: (reason, inline) => hooks.fail(reason, inline),
  });
  const dashboard = new RunDashboard({
    storage,
    state: () => hooks.current().state,
    meta: () => hooks.current().meta,
    view: () => hooks.view(),
    poolInfo: (swarm) => commands.poolInfo(swarm),
    marks: (swarm) => timeline.marks(swarm),
    usage: () => usage.usage,
    env,
  });
  const live = new LiveFeed(ctx, async () => JSON.stringify(await dashboard.snapshot()));
  const sandboxes = new RunSandboxes(ctx.storage.sql, () => workerSandboxBackend(env, { fetch: outbound }).backend, (level, message, fields) => hooks.log(level, message, fields));
  return { storage, datasets, commands, dashboard, live, timeline, sandboxes };
}
