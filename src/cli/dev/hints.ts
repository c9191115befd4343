/**
 * @module cli/dev/hints — one-time hint lines while a dev run is followed, so a wait that cannot end is not silent:
 * an engine that stays OFFLINE / unreachable / not ROLLING for `afterMs` (default 15 s), and a first step whose mean
 * reward is 0 against a server the CLI did not start (a standalone emulator without an answer key). Each hint is
 * printed once. Pure: status views and the clock in, lines out.
 */
import { shortStatus } from "./render.ts";
import type { RunView } from "./runs-api.ts";

/** How long an engine may stay stuck before the hint, milliseconds. */
export const ENGINE_HINT_AFTER_MS = 15_000;

/** What {@link DevHints} needs to know about the run. */
export interface DevHintsContext {
  /** swarm name → URL (for the messages) */
  swarmUrls: ReadonlyMap<string, string>;
  /** false with `--no-start-engine`: the CLI did not sync the job or start the engine */
  startEngine: boolean;
  /** the swarm servers were given on the command line (not local emulators started by dev) */
  external: boolean;
  /** override of {@link ENGINE_HINT_AFTER_MS} */
  afterMs?: number;
}

type StuckKind = "offline" | "unreachable" | "no-status" | "not-rolling";

function stuckKind(engineStatus: string, seenRolling: boolean): StuckKind | null {
  const status = shortStatus(engineStatus);
  if (status === "OFFLINE") return "offline";
  if (status === "CANNOT_CONNECT") return "unreachable";
  if (status === "unknown") return "no-status";
  if (status !== "ROLLING" && !seenRolling) return "not-rolling";
  return null;
}

/** Watches status views and returns each hint line once (prefixed `hint: `). */
export class DevHints {
  readonly #since = new Map<string, { kind: StuckKind; atMs: number }>();
  readonly #seenRolling = new Set<string>();
  readonly #given = new Set<string>();

  constructor(private readonly ctx: DevHintsContext) {}

  /**
   * Feeds one status view.
   * @param nowMs epoch ms of the view
   * @returns hint lines not given before (usually none)
   */
  observe(status: Pick<RunView, "phase" | "engines" | "steps">, nowMs: number): string[] {
    const lines: string[] = [];
    const waiting = status.phase === "created" || status.phase === "running";
    for (const e of status.engines) {
      if (shortStatus(e.engineStatus) === "ROLLING") this.#seenRolling.add(e.swarm);
      const kind = waiting ? stuckKind(e.engineStatus, this.#seenRolling.has(e.swarm)) : null;
      const since = this.#since.get(e.swarm);
      if (kind === null) {
        this.#since.delete(e.swarm);
        continue;
      }
      if (!since || since.kind !== kind) {
        this.#since.set(e.swarm, { kind, atMs: nowMs });
        continue;
      }
      const afterMs = this.ctx.afterMs ?? ENGINE_HINT_AFTER_MS;
      if (nowMs - since.atMs >= afterMs) this.#give(`${e.swarm}/${kind}`, this.#engineHint(e.swarm, kind, shortStatus(e.engineStatus), afterMs), lines);
    }
    const first = status.steps.find((s) => s.windowIndex === 0);
    if (this.ctx.external && first && first.wallTimeMs !== null && first.episodesEnded > 0 && first.meanReward === 0) {
      const urls = [...this.ctx.swarmUrls.values()].join(", ");
      this.#give(
        "zero-reward",
        `hint: step 1's mean reward is 0.000 with ${urls}; a standalone 'ajet-edge emulator' answers correctly only what its answer key holds — start it with --answer-key FILE (rows of your tasks), or check the function's reward`,
        lines,
      );
    }
    return lines;
  }

  #give(key: string, line: string, out: string[]): void {
    if (this.#given.has(key)) return;
    this.#given.add(key);
    out.push(line);
  }

  #engineHint(swarm: string, kind: StuckKind, status: string, afterMs: number): string {
    const url = this.ctx.swarmUrls.get(swarm) ?? swarm;
    const forS = `for ${Math.round(afterMs / 1000)} s`;
    if (kind === "unreachable") return `hint: the Worker cannot reach the swarm server at ${url} (${forS}); check that it is running and reachable from here`;
    if (kind === "no-status") return `hint: no engine status from ${url} after ${Math.round(afterMs / 1000)} s; check that the swarm server is running and reachable from here`;
    if (kind === "offline") {
      return this.ctx.startEngine
        ? `hint: the engine at ${url} has been OFFLINE ${forS} after it was started; check the swarm server's log (it may have stopped or failed to boot)`
        : `hint: the engine at ${url} is OFFLINE (${forS}); start it (drop --no-start-engine and the Worker syncs the job and starts it) or check the server`;
    }
    return `hint: the engine at ${url} is ${status}, not ROLLING yet after ${Math.round(afterMs / 1000)} s; the run waits for ROLLING (a real server can take minutes to load the model)`;
  }
}
