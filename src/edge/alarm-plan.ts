/**
 * @module edge/alarm-plan — the run object's alarm arming rule, pure (time is an input): which alarm time to write,
 * if any, given the core's next wake-up and the alarm already armed.
 */

/** An active run's alarm fires at least this often (BC-45), even when the core has nothing scheduled sooner. */
export const IDLE_ALARM_MS = 5_000;

/** What to do with the alarm: delete it, keep the one armed, or set it to `atMs` (epoch ms). */
export type AlarmPlan = { kind: "delete" } | { kind: "keep" } | { kind: "set"; atMs: number };

/**
 * The alarm for a run. A finished run wakes only when the core still has something scheduled; an active run wakes
 * at least every {@link IDLE_ALARM_MS} (the claim sweep runs on the alarm). An alarm already armed in the future and
 * no later than the wanted time is kept (it re-arms when it fires): a burst of episode RPCs writes no alarm at all.
 * @param wakeAtMs the core's next wake-up (epoch ms; null: nothing scheduled), or `nowMs` to wake at once
 * @param armedAtMs the alarm time last written (null: unknown or spent)
 */
export function planAlarm(input: { finished: boolean; wakeAtMs: number | null; armedAtMs: number | null; nowMs: number }): AlarmPlan {
  const { finished, wakeAtMs, armedAtMs, nowMs } = input;
  const at = finished ? (wakeAtMs === null ? null : Math.max(wakeAtMs, nowMs)) : Math.max(Math.min(wakeAtMs ?? Infinity, nowMs + IDLE_ALARM_MS), nowMs);
  if (at === null) return { kind: "delete" };
  if (armedAtMs !== null && armedAtMs > nowMs && armedAtMs <= at) return { kind: "keep" };
  return { kind: "set", atMs: at };
}
