/**
 * @module emulator/engine/engine-sim — the simulated training engine (trainer + rollout manager + worker
 * threads) that a real swarm server spawns on `/start_engine` (spec §4.2, §5.2, §7.3). It talks to the server
 * state exactly as the real engine talks to the server: status updates, episode registration, withdrawal via
 * `is_episode_claimed`, pool pushes, and acks on the result channel.
 *
 * Timing (all from `EmulatorTimings`): ROLLING `bootMs` after launch with `global_step` 1, its episodes registered
 * `registrationDelayMs` after each edge to ROLLING (upstream ~1 s); a worker checks the
 * stop condition after each result (upstream stop callback) → ROLLING_POST; the trainer tick (`tickMs`) also
 * checks it (agree modes) and, once every claimed episode is resolved, posts WEIGHT_SYNCING (records wiped);
 * `weightSyncMs` later ROLLING with `global_step + 1`, or OFFLINE with `global_step` 0 after the last step. With
 * `repeatStatusPosts` (default) ROLLING_POST is posted twice (the stop callback, then the trainer's next tick) and
 * WEIGHT_SYNCING twice (without, then with `global_step`), as the upstream trainer does.
 */
import { ENGINE, defaultEpisodeKey, serverEpisodeCapacity, type ActiveSwarmClient, type WorkflowOutput } from "../../protocol/index.ts";
import type { Clock, TimerHandle } from "../clock.ts";
import type { EmulatorTimings } from "../options.ts";
import type { Rng } from "../rng.ts";
import { pushPoolInformation, pushVerboseLog } from "../server/pool.ts";
import type { EngineLink, EpisodeRecord, ServerState } from "../server/state.ts";
import { classifyTrainResult } from "../step-log.ts";
import { lastTrainingStep, type TrainConfig } from "../train-config.ts";
import { CurrentBatch } from "./batch.ts";

/** Read-only view of the simulated engine, for tests and tooling. */
export interface EngineSimView {
  /** True from `/start_engine` until the engine exits or is killed. */
  readonly isRunning: boolean;
  /** Worker slots (registered-or-claimed episodes it waits on) = `min(B, ceil(max_env_worker / R)) × R`. */
  readonly capacity: number;
  /** Uuids of the episodes its workers currently wait on. */
  readonly slotUuids: readonly string[];
  /** True after the stop condition was met in this step (ROLLING_POST drain). */
  readonly isDraining: boolean;
}

const PUSH_EVERY_N_TICKS = 3; // upstream: pushes every 12 s from a 4 s loop

/** The simulated engine. One instance per emulator; `launch` starts a run, `kill` ends it. */
export class EngineSim implements EngineLink, EngineSimView {
  private config: TrainConfig | null = null;
  private running = false;
  private draining = false;
  /** false from each ROLLING edge until `registrationDelayMs` later: no episode is registered before */
  private registering = false;
  /** the trainer's second ROLLING_POST of this step is still to come (`repeatStatusPosts`) */
  private rollingPostRepeatDue = false;
  private step = 0;
  private ticks = 0;
  private readonly slots = new Set<string>();
  private readonly batch = new CurrentBatch();
  private activeClientsSeen: ActiveSwarmClient[] = [];
  private timers: TimerHandle[] = [];

  constructor(
    private readonly state: ServerState,
    private readonly clock: Clock,
    private readonly timings: EmulatorTimings,
    private readonly ids: Rng,
    private readonly publicBaseUrl: () => string,
    private readonly repeatStatusPosts = true,
  ) {}

  get isRunning(): boolean {
    return this.running;
  }
  get capacity(): number {
    return this.config ? serverEpisodeCapacity(this.config) : 0;
  }
  get slotUuids(): readonly string[] {
    return [...this.slots];
  }
  get isDraining(): boolean {
    return this.draining;
  }

  /** Starts a run: the engine posts ROLLING (`global_step` 1) after `bootMs`. */
  launch(config: TrainConfig): void {
    this.kill();
    this.config = config;
    this.running = true;
    this.step = 1;
    this.after(this.timings.bootMs, () => this.beginStep());
  }

  /** Kills the engine process: no further status posts, registrations or ticks. */
  kill(): void {
    for (const t of this.timers) this.clock.clearTimer(t);
    this.timers = [];
    this.running = false;
    this.draining = false;
    this.registering = false;
    this.rollingPostRepeatDue = false;
    this.slots.clear();
    this.batch.clear();
  }

  /** Result channel: a train episode's output (spec §5.10). Acks at once; new work is registered after. */
  async deliverResult(record: Readonly<EpisodeRecord>, output: WorkflowOutput, taskId: string): Promise<void> {
    const uuid = record.episode_uuid;
    if (!this.running || !this.config || !this.slots.has(uuid)) return;
    this.slots.delete(uuid);
    const verdict = classifyTrainResult(record.llm_call_count, output.reward);
    if (!verdict.dropped) this.batch.add(taskId, { episodeUuid: uuid, reward: output.reward as number });
    this.push();
    if (this.draining || this.state.engineStatus !== ENGINE.ROLLING) return;
    if (this.batch.isClosed(this.config, this.activeClientsSeen)) this.softStop();
    else if (this.registering) this.registerOne();
  }

  /** Result channel: RUNNER.SPECIAL.RESET_CONTEXT_TRACKER. The worker keeps waiting on the same uuid. */
  async resetEpisode(): Promise<void> {}

  private after(delayMs: number, fn: () => void): void {
    // Background: a forgotten emulator does not keep a Node process alive (request sleeps still do).
    const handle = this.clock.setTimer(
      () => {
        this.timers = this.timers.filter((t) => t !== handle);
        if (this.running) fn();
      },
      delayMs,
      { background: true },
    );
    this.timers.push(handle);
  }

  private beginStep(): void {
    this.state.updateEngineStatus({ engine_status: ENGINE.ROLLING, engine_status_detail: null, global_step: this.step });
    this.draining = false;
    this.batch.clear();
    this.push();
    // upstream: the worker threads register their episodes about 1 s after the edge (claims see an empty queue)
    const fill = () => {
      this.registering = true;
      while (this.slots.size < this.capacity) this.registerOne();
    };
    this.registering = false;
    if (this.timings.registrationDelayMs > 0) this.after(this.timings.registrationDelayMs, () => this.state.engineStatus === ENGINE.ROLLING && !this.draining && fill());
    else fill();
    this.scheduleTick();
  }

  private registerOne(): void {
    const uuid = this.ids.hex32();
    const res = this.state.registerEpisode({
      episode_uuid: uuid,
      openai_base_url: this.publicBaseUrl(),
      openai_api_key: defaultEpisodeKey(uuid),
      zmq_listen_result_addr: `ipc:///tmp/ajet/${uuid}-workflow.sock`,
    });
    if (res.success) this.slots.add(uuid);
  }

  private push(): void {
    if (!this.config) return;
    this.activeClientsSeen = pushPoolInformation(this.state, this.batch.snapshot(this.config)).active_clients;
  }

  private scheduleTick(): void {
    this.after(this.timings.tickMs, () => this.tick());
  }

  /** The trainer loop: stop check, drain check, slot upkeep. */
  private tick(): void {
    const config = this.config;
    if (!config) return;
    this.ticks++;
    if (this.ticks % PUSH_EVERY_N_TICKS === 0) this.push();
    if (this.draining && this.rollingPostRepeatDue && this.state.engineStatus === ENGINE.ROLLING_POST) {
      // the trainer's own ROLLING_POST, after the workers' stop callback posted the first
      this.rollingPostRepeatDue = false;
      this.state.updateEngineStatus({ engine_status: ENGINE.ROLLING_POST, engine_status_detail: null, global_step: null });
    }
    const status = this.state.engineStatus;
    if (!this.draining && status === ENGINE.ROLLING) {
      for (const uuid of this.slots) if (!this.state.records.has(uuid)) this.slots.delete(uuid);
      if (this.batch.isClosed(config, this.activeClientsSeen)) this.softStop();
      else if (this.registering) while (this.slots.size < this.capacity) this.registerOne();
    }
    if (this.draining) {
      this.withdrawUnclaimed();
      if (this.slots.size === 0) {
        this.hardStop();
        return;
      }
    }
    this.scheduleTick();
  }

  /** `stop_all_threads_soft`: no new episodes; unclaimed ones are withdrawn; status ROLLING_POST. */
  private softStop(): void {
    this.draining = true;
    this.rollingPostRepeatDue = this.repeatStatusPosts;
    this.state.updateEngineStatus({ engine_status: ENGINE.ROLLING_POST, engine_status_detail: null, global_step: null });
    this.withdrawUnclaimed();
  }

  private withdrawUnclaimed(): void {
    for (const uuid of this.slots) {
      if (!this.state.records.has(uuid)) this.slots.delete(uuid);
      else if (!this.state.isEpisodeClaimed(uuid, true).success) this.slots.delete(uuid);
    }
  }

  /** `stop_all_threads_hard` + the policy update: WEIGHT_SYNCING (wipe), then the next step or the end. */
  private hardStop(): void {
    const config = this.config as TrainConfig;
    const samples = this.batch.episodes().length;
    this.rollingPostRepeatDue = false;
    if (this.repeatStatusPosts) this.state.updateEngineStatus({ engine_status: ENGINE.WEIGHT_SYNCING, engine_status_detail: null, global_step: null });
    this.state.updateEngineStatus({ engine_status: ENGINE.WEIGHT_SYNCING, engine_status_detail: null, global_step: this.step });
    pushVerboseLog(this.state, "update_policy", `[sim] update_policy step=${this.step} samples=${samples}`, this.timings.verboseLogTtlMs);
    this.batch.clear();
    this.push();
    this.after(this.timings.weightSyncMs, () => {
      if (this.step >= lastTrainingStep(config)) {
        this.state.updateEngineStatus({ engine_status: ENGINE.OFFLINE, engine_status_detail: null, global_step: 0 });
        this.kill();
        return;
      }
      this.step++;
      this.beginStep();
    });
  }
}
