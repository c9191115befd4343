/**
 * @module bench/agree-cycle.bench — the agree-mode cycle (issue 20 §3): the swarm-cycle measurement (bench/swarm-cycle,
 * the upstream server's timing shape, LLM 200 ms, 10 steps) once with `rollout_until_finish_enough_tasks` and once with
 * `rollout_until_all_clients_agree_sync_weight` on the same emulator settings: steps per hour of each. In the agree mode
 * the run votes once its window is done and the engine reads the votes from its pool push (after each finished
 * episode, and every 3 trainer ticks), so a step there cannot be shorter than in the tasks mode.
 */
import { issueShape, measureSwarmCycle, type SwarmCycleResult } from "./swarm-cycle.bench.ts";

/** Both measurements. */
export interface AgreeCycleResult {
  tasks: SwarmCycleResult;
  allAgree: SwarmCycleResult;
  /** agree steps/h ÷ tasks steps/h */
  ratio: number;
}

/** Measures the tasks mode, then the all-agree mode, on the same shape. @throws when a run does not finish */
export async function measureAgreeCycle(llmLatencyMs = 200, steps = 10): Promise<AgreeCycleResult> {
  const tasks = await measureSwarmCycle(issueShape(llmLatencyMs, steps));
  const allAgree = await measureSwarmCycle({ ...issueShape(llmLatencyMs, steps), method: "rollout_until_all_clients_agree_sync_weight" });
  return { tasks, allAgree, ratio: allAgree.stepsPerHour / tasks.stepsPerHour };
}

/** Printable lines. */
export function formatAgreeCycle(r: AgreeCycleResult): string[] {
  const line = (name: string, x: SwarmCycleResult) =>
    `  ${name}: ${x.stepsPerHour.toFixed(0)} steps/h, median step ${x.medianStepS.toFixed(2)} s (rollout ${x.medianRolloutS.toFixed(2)} s), ${x.episodes} episodes, ${x.wallS.toFixed(0)} s wall`;
  return [
    `agree cycle, LLM ${r.tasks.settings.llmLatencyMs} ms, batch ${r.tasks.settings.batchSize} × ${r.tasks.settings.numRepeat}: all-agree at ${(100 * r.ratio).toFixed(1)} % of finish_enough_tasks`,
    line("finish_enough_tasks", r.tasks),
    line("all_clients_agree  ", r.allAgree),
  ];
}
