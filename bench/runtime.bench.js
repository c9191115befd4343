/**
 * @module bench/runtime.bench — the cost of one episode's orchestration (claim, status, rollout context, the
 * countdown function, outcome, end, reports) against the in-process emulator with zero LLM latency: episodes per
 * second sequentially, and with 32 episodes sharing one invocation's 6 connections (BC-48).
 */
import { performance } from "node:perf_hooks";
import { realSleep, SwarmClient } from "../src/client/index.js";
import { createEmulator } from "../src/emulator/index.js";
import { AgentJetJob } from "../src/job/index.js";
import { runEpisode } from "../src/runtime/episode-runner.js";
import { ConnectionLimiter, SubrequestBudget } from "../src/runtime/limits.js";
import { generateCountdownTasks } from "../src/tasks/index.js";
import { rolloutFunctions } from "../functions/index.js";
import { summarize } from "./harness.js";
const silent = { debug() { }, info() { }, warn() { }, error() { } };
const applied = async () => ({ status: "applied" });
const port = { episodeClaimed: applied, claimFailed: applied, episodeOutcomeRecorded: applied, episodeReported: applied, getTask: () => { throw new Error("inline tasks only"); } };
/** Runs the runtime benchmarks. */
export async function runtimeBenchmarks() {
    const tasks = generateCountdownTasks({ count: 256, seed: 3 });
    const emulator = createEmulator({ profile: "fast", seed: 3, answerKey: tasks.map((t) => t.metadata), timings: { llmLatency: { kind: "fixed", ms: 0 } } });
    const fetch = async (input, init) => emulator.app.fetch(new Request(input, init));
    const url = "http://127.0.0.1:10086";
    try {
        const client = new SwarmClient({ baseURL: url, fetch, logger: silent });
        await client.autoSyncTrainConfigAndStartEngine(new AgentJetJob({ batchSize: 4096, numRepeat: 1, maxEnvWorker: 64 }));
        let n = 0;
        const message = () => {
            const task = tasks[n % tasks.length];
            n++;
            return {
                v: 1, runId: "bench", episodeKey: `bench/0/${n}#0`, attempt: 1, dispatchId: 1, clientUuid: client.clientUuid, functionName: "countdown",
                episodeType: "train", swarms: [{ name: "default", url }], discardEpisodeTimeoutSeconds: 240, throttlePolicy: null,
                taskId: task.task_id, task, taskRef: { source: "bench", taskIndex: n }, leaseDeadlineAtMs: Date.now() + 600_000, model: "bench",
            };
        };
        const deps = (limiter = new ConnectionLimiter(), budget = new SubrequestBudget(100_000)) => ({
            port, functions: rolloutFunctions, fetch, limiter, budget, now: () => Date.now(), sleep: realSleep, random: Math.random, log: silent, secrets: {},
        });
        const sequential = [];
        for (let i = 0; i < 200; i++) {
            const t0 = performance.now();
            const r = await runEpisode(message(), deps());
            if (r.kind === "reported")
                sequential.push(performance.now() - t0);
        }
        const limiter = new ConnectionLimiter();
        const t0 = performance.now();
        const batch = await Promise.all(Array.from({ length: 32 }, () => runEpisode(message(), deps(limiter))));
        const batchMs = performance.now() - t0;
        const ok = batch.filter((r) => r.kind === "reported").length;
        return [
            summarize("runtime: one countdown episode, in-process emulator", sequential, {
                note: "claim + status + 1 LLM call + end, plus the scheduler-port calls (in memory)",
            }),
            {
                name: "runtime: 32 episodes sharing one invocation (6 connections)",
                calls: ok,
                meanMs: batchMs / Math.max(1, ok),
                p50Ms: batchMs / Math.max(1, ok),
                p99Ms: batchMs / Math.max(1, ok),
                maxMs: batchMs,
                opsPerSec: (ok / batchMs) * 1000,
                note: `${ok}/32 reported; peak connections ${limiter.peak}`,
            },
        ];
    }
    finally {
        emulator.close();
    }
}
