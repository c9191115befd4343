/**
 * @module edge/run/alarm-plan — the run object's alarm: the arming rule, pure (time is an input: which alarm time to
 * write, if any, given the core's next wake-up and the alarm already armed), and {@link RunAlarm}, which writes what
 * the rule says and backs off after a failing tick.
 */
import { nextWakeAtMs, type SchedulerState } from "../../scheduler/index.ts";

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

/** Alarm back-off after a failing tick, ms (the handler itself never throws). */
export const FAILED_TICK_ALARM_MS = 2_000;

/** The alarm of one run object; it remembers the time it last wrote (in memory: unknown after a reset). */
export class RunAlarm {
  /** the alarm time last set (null: unknown, e.g. after a reset or once the alarm fired) */
  #armedAtMs: number | null = null;

  /** @param storage the object's storage (`ctx.storage`) */
  constructor(private readonly storage: { setAlarm(atMs: number): Promise<void>; deleteAlarm(): Promise<void> }) {}

  /** The alarm fired: the time it was set for is spent. */
  fired(): void {
    this.#armedAtMs = null;
  }

  /**
   * Sets the alarm by {@link planAlarm} for the core's next wake-up (or `alsoAtMs`, the sandbox sweep's, when sooner:
   * a finished run keeps waking while a sandbox waits to be destroyed), or for now with `wakeNow`. An alarm time
   * already armed is not written again: each write is a storage operation every RPC's answer would wait for.
   */
  async arm(state: SchedulerState, wakeNow: boolean, nowMs: number, alsoAtMs: number | null = null): Promise<void> {
    const core = nextWakeAtMs(state);
    const wakeAtMs = wakeNow ? nowMs : core === null ? alsoAtMs : alsoAtMs === null ? core : Math.min(core, alsoAtMs);
    const plan = planAlarm({ finished: state.run.phase === "finished", wakeAtMs, armedAtMs: this.#armedAtMs, nowMs });
    if (plan.kind === "keep") return;
    this.#armedAtMs = plan.kind === "set" ? plan.atMs : null;
    if (plan.kind === "set") await this.storage.setAlarm(plan.atMs);
    else await this.storage.deleteAlarm();
  }

  /** A tick failed: the alarm fires again in {@link FAILED_TICK_ALARM_MS}. */
  async retrySoon(nowMs: number): Promise<void> {
    this.#armedAtMs = nowMs + FAILED_TICK_ALARM_MS;
    await this.storage.setAlarm(this.#armedAtMs);
  }
}
