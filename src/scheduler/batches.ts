/**
 * @module scheduler/batches — batch truth: which server batch each accepted train episode landed in, and what became
 * of that batch, on every swarm server of the run. A batch is named by its server, that server's engine epoch (its
 * restart count) and `global_step`: within one engine run a step number names one batch (spec §4.4), and a restart
 * wipes every episode record (spec §4.3). An episode of a multi-swarm function lands once per claim, each in its own
 * server's batch; a wipe on any of them runs the episode again once (its landings elsewhere stay tracked as rewards
 * those servers hold, never counted or re-run twice). The run's steps and top-ups follow the first server.
 *
 * What the core learns from the server and how it reads it:
 *  - an accepted end lands in the batch of its claim (the step read right after the claim; the server wipes every
 *    record when it leaves ROLLING_POST, so an end is only accepted in the batch it was claimed in, spec §5.7);
 *  - the pool information's `completed_tasks_details` (spec §2.10) confirms which of the run's episode uuids the
 *    engine holds for the batch it is collecting, names other clients' episodes in it, and counts its complete tasks;
 *  - a batch is **closed** (trained) once the engine is seen at a higher step in the same epoch (its next ROLLING,
 *    spec §4.2 step 6), or exits cleanly (OFFLINE with `global_step` 0) while draining or training it;
 *  - a batch is **wiped** when the engine leaves the rolling states without training it: a restart or stop (OFFLINE
 *    or BOOTING seen, or the step seen going backwards), or the pool no longer listing episodes it listed for the
 *    same step (an engine restarted at the same step between two polls). Its groups are run again.
 */
import type { Draft } from "./draft.ts";
import type { PoolSeen } from "./events.ts";
import { ENGINE } from "../protocol/index.ts";
import { serverOfSwarm } from "../port/index.ts";
import type { EngineView } from "./engine-gate.ts";
import { Map as ImmutableMap } from "immutable";
import { foreignNonDummyTasks } from "./collection-method.ts";
import { batchKeyOf, isInFlight, type BatchRow, type EpisodeRow, type LandedEpisode } from "./state.ts";
import { foreignTasks } from "./pool-tasks.ts";

/** A batch's landed episodes when it holds none. */
export function emptyLanded(): BatchRow["episodes"] {
  return ImmutableMap<string, LandedEpisode>();
}


/** The index in `config.swarms` of the server a claim's swarm name runs on (the port's rule), -1 when none. */
export function serverIndexOf(d: Pick<Draft, "run">, swarm: string): number {
  const server = serverOfSwarm(swarm, d.run.config.swarms.map((name) => ({ name })));
  return server ? d.run.config.swarms.indexOf(server.name) : -1;
}

/** The batch key prefix argument of server `index`: null for the first server, else its name. */
function serverName(d: Pick<Draft, "run">, index: number): string | null {
  return index <= 0 ? null : (d.run.config.swarms[index] ?? null);
}

/** The server index of a batch row (0 for the first server). */
export function serverIndexOfBatch(d: Pick<Draft, "run">, batch: BatchRow): number {
  return batch.server ? Math.max(0, d.run.config.swarms.indexOf(batch.server)) : 0;
}

/**
 * The key a window's `landed` counts an episode of `batch` under: the batch's own key on the first server; for a
 * batch of another server, the first server's open batch holding the same episode (null when none: nothing to
 * take back from the window's landings).
 */
export function stepBatchKeyOf(d: Pick<Draft, "batches">, batch: BatchRow, episodeKey: string): string | null {
  if (!batch.server) return batch.batchKey;
  const first = openBatches(d, null).find((b) => [...b.episodes.values()].some((e) => e.episodeKey === episodeKey));
  return first?.batchKey ?? null;
}

const ROLLING_STATES: ReadonlySet<string> = new Set([ENGINE.ROLLING, ENGINE.ROLLING_POST]);

/** The first swarm's view (the run's steps come from it). */
function stepSwarm(d: Draft): EngineView | undefined {
  return d.run.engines[0];
}

/** A server's engine epoch now (0 before any observation). @param server index in `config.swarms`, default the first */
export function currentEngineEpoch(d: Draft, server = 0): number {
  return d.run.engines[server]?.restarts ?? 0;
}

/**
 * The engine epoch of each claim's server now, by the claim's swarm name (stored on the row at claim time: with the
 * claim's step it names the server batch each of its ends lands in).
 */
export function claimEpochs(d: Draft, claims: readonly { swarm: string }[]): Record<string, number> {
  return Object.fromEntries(claims.map((c) => [c.swarm, currentEngineEpoch(d, Math.max(0, serverIndexOf(d, c.swarm)))]));
}

/**
 * The batches still collecting (neither trained nor wiped), of every server or of one.
 * @param server a run-spec swarm name (null: the first server); omitted: every server
 */
export function openBatches(d: Pick<Draft, "batches">, server?: string | null): BatchRow[] {
  return Object.values(d.batches).filter((b) => b.state === "open" && (server === undefined || (b.server ?? null) === server));
}

/** Accepted rewards that sit in batches the server has not trained (yet). */
export function rewardsInOpenBatches(d: Pick<Draft, "batches">): number {
  return openBatches(d).reduce((n, b) => n + b.episodes.size, 0);
}

/** A claim's target batch: its server, epoch, step and key. */
interface LandingTarget {
  server: number;
  uuid: string;
  epoch: number;
  step: number | null;
  key: string;
}

/** Where each claim of an ended row lands (claims on a server the run lacks are skipped). */
/** The batch a first landing opens on its server (empty; the caller adds the landing). */
function openedBatch(d: Draft, t: LandingTarget): BatchRow {
  return {
    batchKey: t.key, ...(t.server > 0 ? { server: d.run.config.swarms[t.server]! } : {}), engineEpoch: t.epoch, globalStep: t.step,
    openedAtRollingEdges: d.run.engines[t.server]?.rollingEdges ?? 0, state: "open",
    episodes: emptyLanded(), episodesLanded: 0, rewardSum: 0, foreignEpisodes: 0, poolCompletedTasks: null, poolTaskTarget: null,
    lastStatus: ENGINE.ROLLING, firstLandedAtMs: d.nowMs, closedAtMs: null, wipedAtMs: null,
  };
}

function landingTargets(d: Draft, row: EpisodeRow): LandingTarget[] {
  const out: LandingTarget[] = [];
  row.claims.forEach((claim, i) => {
    const server = serverIndexOf(d, claim.swarm);
    if (server < 0) return;
    const epoch = (server === 0 ? row.engineEpoch : undefined) ?? row.engineEpochs?.[claim.swarm] ?? currentEngineEpoch(d, server);
    const step = claim.globalStep ?? (i === 0 ? row.globalStep : null) ?? d.run.engines[server]?.globalStep ?? null;
    out.push({ server, uuid: claim.episodeUuid, epoch, step, key: batchKeyOf(epoch, step, serverName(d, server)) });
  });
  // a row without claims (an ended report with none recorded) lands in the first server's batch under its key
  if (out.length === 0) {
    const epoch = row.engineEpoch ?? currentEngineEpoch(d);
    const step = row.globalStep ?? stepSwarm(d)?.globalStep ?? null;
    out.push({ server: 0, uuid: row.episodeKey, epoch, step, key: batchKeyOf(epoch, step) });
  }
  return out;
}

/**
 * Lands one accepted train episode (status `ended`, in a window) in the batch of each of its claims (one per
 * server its function claimed on).
 * @returns `"landed"`, or `"wiped"` when one of those batches is already known to be wiped (the end was accepted
 * before a restart the core saw first): the caller runs the repeat again instead of counting it, and nothing lands
 */
export function landEpisode(d: Draft, row: EpisodeRow, reward: number): "landed" | "wiped" {
  const targets = landingTargets(d, row);
  if (targets.some((t) => d.batches[t.key]?.state === "wiped")) return "wiped";
  const episode: LandedEpisode = {
    episodeKey: row.episodeKey, groupKey: row.groupKey, source: row.source, taskIndex: row.taskIndex, epoch: row.epoch,
    windowIndex: row.windowIndex ?? 0, rerun: rerunOf(row.groupKey), reward, confirmed: false,
  };
  for (const t of targets) {
    const existing = d.batches[t.key];
    const batch = existing ?? openedBatch(d, t);
    d.putBatch({
      ...batch,
      // a closed batch keeps no episode list: a late report of an end it trained only adds to the counts
      episodes: batch.state === "open" ? batch.episodes.set(t.uuid, episode) : batch.episodes,
      episodesLanded: batch.episodesLanded + 1,
      rewardSum: batch.rewardSum + reward,
    }, [t.uuid]);
  }
  // the window's real global steps are the first server's (the run's steps follow it)
  const first = targets.find((t) => t.server === 0);
  if (row.windowIndex !== null && first) {
    const s = d.steps[String(row.windowIndex)];
    if (s) d.patchStep(s.windowIndex, { landed: { ...(s.landed ?? {}), [first.key]: (s.landed?.[first.key] ?? 0) + 1 } });
  }
  return "landed";
}

/**
 * A multi-swarm end refused on some servers but accepted on `swarms`: the repeat runs again (a failed attempt), and
 * the accepted rewards are tracked in their servers' batches as `rerunElsewhere` (held there — trained or stranded —
 * but neither counted nor re-run). Their servers get one more episode of the task when the repeat runs again: a
 * group of independent servers cannot be made whole on one of them alone.
 */
export function landPartialEnd(d: Draft, row: EpisodeRow, reward: number, swarms: readonly string[]): void {
  const accepted = new Set(swarms);
  const episode: LandedEpisode = {
    episodeKey: row.episodeKey, groupKey: row.groupKey, source: row.source, taskIndex: row.taskIndex, epoch: row.epoch,
    windowIndex: row.windowIndex ?? 0, rerun: rerunOf(row.groupKey), reward, confirmed: false, rerunElsewhere: true,
  };
  for (const t of landingTargets(d, { ...row, claims: row.claims.filter((c) => accepted.has(c.swarm)) })) {
    if (!accepted.has(row.claims.find((c) => c.episodeUuid === t.uuid)?.swarm ?? "")) continue;
    const existing = d.batches[t.key];
    if (existing && existing.state !== "open") continue;
    const batch = existing ?? openedBatch(d, t);
    d.putBatch({ ...batch, episodes: batch.episodes.set(t.uuid, episode) }, [t.uuid]);
  }
}

/** The re-run generation of a group key (`…~N`), 0 for a first run. */
export function rerunOf(groupKey: string): number {
  const i = groupKey.lastIndexOf("~");
  return i < 0 ? 0 : Number(groupKey.slice(i + 1)) || 0;
}

/** The first-run group key of a (possibly re-run) group key. */
export function baseGroupKey(groupKey: string): string {
  const i = groupKey.lastIndexOf("~");
  return i < 0 ? groupKey : groupKey.slice(0, i);
}

/** Callbacks the batch observer needs from task-groups (kept as parameters: no import cycle). */
export interface BatchEffects {
  /** the batch was wiped: run its landed episodes' groups again */
  rerun(d: Draft, batch: BatchRow, landed: LandedEpisode[]): void;
  /** windows whose episodes sat in a batch that just closed or was wiped (their closure may be due) */
  windowsTouched(d: Draft, windowIndices: number[]): void;
}

/**
 * Applies one observation of one server (status, step and, optionally, pool information) to its open batches:
 * closes the trained ones, wipes the lost ones (and has their groups run again), confirms landings and counts other
 * clients' episodes from the pool. Call after the engine view was updated.
 * @param server the server's index in `config.swarms`
 */
export function observeBatches(d: Draft, server: number, view: EngineView, pool: PoolSeen | undefined, effects: BatchEffects): void {
  for (const batch of openBatches(d, serverName(d, server))) {
    const sameEpoch = view.restarts === batch.engineEpoch;
    if (!sameEpoch) {
      // left the rolling states: trained only on a clean exit after it drained (OFFLINE, global_step 0, spec §4.2)
      const cleanExit = view.engineStatus === ENGINE.OFFLINE && view.globalStep === 0 && view.restarts === batch.engineEpoch + 1;
      const training = batch.lastStatus === ENGINE.ROLLING_POST || batch.lastStatus === ENGINE.WEIGHT_SYNCING;
      if (cleanExit && training) closeBatch(d, batch, effects);
      else wipeBatch(d, batch, "the engine stopped or restarted before training it", effects);
      continue;
    }
    if (batch.globalStep !== null && view.globalStep !== null) {
      if (view.globalStep > batch.globalStep) {
        closeBatch(d, batch, effects);
        continue;
      }
      if (view.globalStep === batch.globalStep && isBatchStatus(view.engineStatus) && view.engineStatus !== batch.lastStatus) {
        d.putBatch({ ...batch, lastStatus: view.engineStatus });
      }
    } else if (batch.globalStep === null && view.rollingEdges > batch.openedAtRollingEdges && view.engineStatus === ENGINE.ROLLING) {
      closeBatch(d, batch, effects);
    }
  }
  if (pool) observePool(d, server, view, pool, effects);
}

function isBatchStatus(status: string): boolean {
  return ROLLING_STATES.has(status) || status === ENGINE.WEIGHT_SYNCING;
}

/**
 * The pool information of the batch the engine is collecting (read only while it is ROLLING or ROLLING_POST at the
 * pool's step): our landed uuids it lists are confirmed (and moved to this batch if the claim named another);
 * uuids it lists that are no episode of this run are other clients'; a confirmed uuid it no longer lists means the
 * engine's batch was emptied at the same step (a restart between polls, or its cached-episodes valve): wiped.
 */
function observePool(d: Draft, server: number, view: EngineView, pool: PoolSeen, effects: BatchEffects): void {
  if (!ROLLING_STATES.has(view.engineStatus) || pool.globalStep === null || pool.globalStep !== view.globalStep) return;
  const name = serverName(d, server);
  const key = batchKeyOf(view.restarts, pool.globalStep, name);
  const listed = new Set(pool.episodeUuids);
  let batch = d.batches[key];
  if (batch?.state === "open") {
    const lost = [...batch.episodes.entries()].filter(([uuid, e]) => e.confirmed && !listed.has(uuid));
    if (lost.length > 0) {
      wipeBatch(d, batch, "the pool information no longer lists episodes it listed for this step", effects);
      view.restarts++; // a new batch generation at the same step: later landings must not join the wiped one
      return;
    }
  }
  // landings the claim attributed to another open batch of this server, listed here: move them (the pool names the batch)
  for (const other of openBatches(d, name)) {
    if (other.batchKey === key) continue;
    const moving = [...other.episodes.entries()].filter(([uuid]) => listed.has(uuid));
    if (moving.length === 0) continue;
    const rest = other.episodes.deleteAll(moving.map(([uuid]) => uuid));
    const moved = moving.reduce((sum, [, e]) => sum + e.reward, 0);
    d.putBatch({ ...other, episodes: rest, episodesLanded: other.episodesLanded - moving.length, rewardSum: other.rewardSum - moved });
    const base: BatchRow = d.batches[key] ?? {
      batchKey: key, ...(name !== null ? { server: name } : {}), engineEpoch: view.restarts, globalStep: pool.globalStep, openedAtRollingEdges: view.rollingEdges, state: "open",
      episodes: emptyLanded(), episodesLanded: 0, rewardSum: 0, foreignEpisodes: 0, poolCompletedTasks: null, poolTaskTarget: null,
      lastStatus: view.engineStatus, firstLandedAtMs: d.nowMs, closedAtMs: null, wipedAtMs: null,
    };
    d.putBatch({ ...base, episodes: base.episodes.merge(moving), episodesLanded: base.episodesLanded + moving.length, rewardSum: base.rewardSum + moved });
    if (name === null) for (const [, e] of moving) moveStepLanding(d, e.windowIndex, other.batchKey, key);
  }
  batch = d.batches[key];
  if (batch?.state !== "open") return;
  const ours = new Set(batch.episodes.keys());
  for (const row of d.rows()) {
    if (isInFlight(row.status) || row.status === "ended") for (const c of row.claims) if (serverIndexOf(d, c.swarm) === server) ours.add(c.episodeUuid);
  }
  const foreign = pool.episodeUuids.filter((u) => !ours.has(u)).length;
  const confirming = [...listed].filter((uuid) => batch.episodes.get(uuid)?.confirmed === false);
  const episodes = batch.episodes.withMutations((m) => {
    for (const uuid of confirming) m.set(uuid, { ...m.get(uuid)!, confirmed: true });
  });
  const others = foreignTasks(pool, ours, episodes, listed, d.run.config.numRepeat);
  d.putBatch({
    ...batch, episodes, foreignEpisodes: Math.max(batch.foreignEpisodes, foreign),
    poolCompletedTasks: pool.completedTasks, poolTaskTarget: pool.completedTaskTarget > 0 ? pool.completedTaskTarget : batch.poolTaskTarget,
    poolForeignTasks: others.tasks, ...(others.running !== null ? { poolForeignRunning: others.running } : {}),
    ...(pool.taskRewards && pool.taskEpisodes ? { poolForeignNonDummyTasks: foreignNonDummyTasks(pool.taskRewards, tasksHolding(pool.taskEpisodes, ours), d.run.config.numRepeat) } : {}),
  }, confirming);
}

/** The task ids of the pool's per-task episode lists that hold one of `ours`. */
function tasksHolding(taskEpisodes: Readonly<Record<string, string[]>>, ours: ReadonlySet<string>): Set<string> {
  return new Set(Object.entries(taskEpisodes).filter(([, uuids]) => uuids.some((u) => ours.has(u))).map(([taskId]) => taskId));
}

function moveStepLanding(d: Draft, windowIndex: number, from: string, to: string): void {
  const s = d.steps[String(windowIndex)];
  if (!s) return;
  const landed = { ...(s.landed ?? {}) };
  landed[from] = (landed[from] ?? 1) - 1;
  if (landed[from] <= 0) delete landed[from];
  landed[to] = (landed[to] ?? 0) + 1;
  d.patchStep(windowIndex, { landed });
}

function windowsOf(batch: BatchRow): number[] {
  return [...new Set([...batch.episodes.values()].map((e) => e.windowIndex))];
}

/** A batch the engine was seen syncing (WEIGHT_SYNCING at its step) when the run finishes: trained. */
export function closeSyncedBatch(d: Draft, batch: BatchRow): void {
  d.putBatch({ ...batch, state: "closed", episodes: emptyLanded(), closedAtMs: d.nowMs });
  d.log("info", "server batch trained (its weight sync was seen as the run finished)", { batch: batch.batchKey, globalStep: batch.globalStep, episodes: batch.episodesLanded });
}

function closeBatch(d: Draft, batch: BatchRow, effects: BatchEffects): void {
  const windows = windowsOf(batch);
  d.putBatch({ ...batch, state: "closed", episodes: emptyLanded(), closedAtMs: d.nowMs });
  d.log("info", "server batch trained", { batch: batch.batchKey, globalStep: batch.globalStep, episodes: batch.episodesLanded, otherClientsEpisodes: batch.foreignEpisodes });
  effects.windowsTouched(d, windows);
}

/**
 * A batch gone before training: its episodes run again — each once, whatever number of servers lose it. Their
 * landings on the run's other servers stay in those batches (the rewards are on those servers: trained or stranded
 * there), marked `rerunElsewhere` so that a later wipe there neither re-runs nor uncounts them again.
 */
function wipeBatch(d: Draft, batch: BatchRow, why: string, effects: BatchEffects): void {
  const all = [...batch.episodes.values()];
  const landed = all.filter((e) => e.rerunElsewhere !== true);
  const windows = windowsOf(batch);
  d.putBatch({ ...batch, state: "wiped", episodes: emptyLanded(), wipedAtMs: d.nowMs, wipedWhy: why });
  d.log("warn", "server batch wiped before training; its groups run again", {
    batch: batch.batchKey, globalStep: batch.globalStep, episodes: landed.length, why,
  });
  if (landed.length > 0) {
    const keys = new Set(landed.map((e) => e.episodeKey));
    for (const other of openBatches(d)) {
      const marking = [...other.episodes.entries()].filter(([, e]) => keys.has(e.episodeKey) && e.rerunElsewhere !== true).map(([uuid]) => uuid);
      if (marking.length === 0) continue;
      const episodes = other.episodes.withMutations((m) => {
        for (const uuid of marking) m.set(uuid, { ...m.get(uuid)!, rerunElsewhere: true });
      });
      d.putBatch({ ...other, episodes }, marking);
    }
    effects.rerun(d, batch, landed);
  }
  effects.windowsTouched(d, windows);
}
