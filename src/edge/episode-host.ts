/**
 * @module edge/episode-host — `EpisodeHost`, the episode Worker's own Durable Object (wrangler.episode.toml): one per
 * run, episode key and attempt, it holds an episode the queue consumer handed over before its wall
 * (docs/design/long-episodes.md). `takeOver` stores the handover record and sets the alarm; each alarm is one leg:
 * it runs the function again from the call journal (runtime/episode-resume), heartbeats the run as the consumer did,
 * and either ends the episode (commit, end or abort, report) or, before its own wall, hands it to its next leg (the
 * record with the longer journal stored, the alarm set again). A leg that was interrupted (workerd killed: the alarm
 * finds its leg marked running) is not run again — its calls in flight may still be generating on the server, and a
 * replay would send them twice — so the host sends nothing more and the run's heartbeat lease gives the attempt up
 * (its claims aborted once, the repeat run again). No secret value is stored: the record holds none, and each leg
 * asks the run's scheduler again for the run's secrets and gateway headers (runtime/episode-resume `askAgain`; the
 * operator's `AJET_SECRETS` still win); a refusal stops the attempt at that leg (claims aborted, nothing ended).
 */
import { DurableObject } from "cloudflare:workers";
import { resumeEpisode, type HandoverRecord } from "../runtime/episode-resume.ts";
import type { HandoverAnswer } from "../runtime/handover.ts";
import { holderDeps, invocationShare } from "./consumer/episode-consumer.ts";
import { rolloutFunctions } from "./consumer/functions-registry.ts";
import { handoverReserveMs, hostName, hostWallMs, reportReserveMs, type HostEnv } from "./consumer/handover-plan.ts";
import type { Env } from "./ground/env.ts";
import { jsonLogger } from "./ground/log.ts";

/** Characters of the record's JSON per stored value (SQLite-backed objects: key and value ≤ 2 MB). */
const CHUNK_CHARS = 500_000;

/** What the host stores besides the record: which leg it is at and whether that leg has begun. */
interface HostState {
  /** the attempt this host holds (run / episode key # attempt) */
  name: string;
  leg: number;
  /** `ready`: the leg's record is stored, its alarm set; `running`: its alarm began it; `done`: over (or given up) */
  phase: "ready" | "running" | "done";
  /** stored values of the leg's record */
  chunks: number;
  /** how the attempt ended here, once done */
  result?: string;
}

/** One handed-over episode attempt; see the module text. */
export class EpisodeHost extends DurableObject<Env & HostEnv> {
  /**
   * Takes the episode of `record` over. @returns `handed` (stored, its first leg set to run; also for the same
   * attempt sent again), `declined` when this host holds another attempt
   */
  async takeOver(record: HandoverRecord): Promise<HandoverAnswer> {
    const name = hostName(record.msg);
    const state = await this.ctx.storage.get<HostState>("state");
    if (state) return state.name === name ? "handed" : "declined";
    await this.#storeLeg(name, record);
    return "handed";
  }

  /** One leg: see the module text. Never throws (a thrown alarm is retried, which would run a leg twice). */
  override async alarm(): Promise<void> {
    const state = await this.ctx.storage.get<HostState>("state");
    if (!state || state.phase === "done") return;
    const log = jsonLogger({ host: state.name, leg: state.leg });
    if (state.phase === "running") {
      log.warn("host leg interrupted (the Worker was restarted mid-leg); sending nothing more: the run's heartbeat lease gives the attempt up");
      await this.#done(state, "interrupted");
      return;
    }
    try {
      const record = await this.#loadLeg(state);
      await this.ctx.storage.put<HostState>("state", { ...state, phase: "running" });
      const result = await this.#runLeg(record, log);
      if (result !== "handedOver") await this.#done(state, result);
    } catch (err) {
      log.error("host leg failed; sending nothing more: the run's heartbeat lease gives the attempt up", { error: String(err) });
      await this.#done(state, "failed").catch(() => undefined);
    }
  }

  async #runLeg(record: HandoverRecord, log: ReturnType<typeof jsonLogger>): Promise<string> {
    const env = this.env;
    const msg = record.msg;
    const startedAtMs = Date.now();
    const wallMs = hostWallMs(env.AJET_HOST_WALL_SECONDS);
    const share = { ...invocationShare(env, startedAtMs), wallAtMs: startedAtMs + wallMs };
    const episodeLog = jsonLogger({ run: msg.runId, episode: msg.episodeKey, attempt: msg.attempt, task: msg.taskId, leg: record.leg });
    episodeLog.info("host leg started", { calls: record.entries.length });
    const done = await resumeEpisode(record, {
      ...holderDeps(msg, env, share, rolloutFunctions(), episodeLog),
      reportReserveMs: reportReserveMs(wallMs),
      gateAtMs: share.wallAtMs - handoverReserveMs(wallMs),
      hand: async (next) => {
        await this.#storeLeg(hostName(next.msg), next);
        return "handed";
      },
    });
    log.info(`host leg over: ${done.kind}`, { ...done });
    return done.kind;
  }

  /** Stores `record` as the next leg (the old leg's values replaced) and sets the alarm to run it now. */
  async #storeLeg(name: string, record: HandoverRecord): Promise<void> {
    const json = JSON.stringify(record);
    const values: Record<string, string> = {};
    for (let i = 0; i * CHUNK_CHARS < json.length; i++) values[`r:${i}`] = json.slice(i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS);
    const chunks = Object.keys(values).length;
    const old = await this.ctx.storage.get<HostState>("state");
    const stale = old ? Array.from({ length: old.chunks }, (_, i) => `r:${i}`).filter((k) => !(k in values)) : [];
    await this.ctx.storage.transaction(async (tx) => {
      for (const [k, v] of Object.entries(values)) await tx.put(k, v);
      if (stale.length) await tx.delete(stale);
      await tx.put<HostState>("state", { name, leg: record.leg, phase: "ready", chunks });
    });
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** The attempt is over here: its record is deleted, the state kept (a `takeOver` sent again is answered `handed`). */
  async #done(state: HostState, result: string): Promise<void> {
    await this.ctx.storage.delete(Array.from({ length: state.chunks }, (_, i) => `r:${i}`));
    await this.ctx.storage.put<HostState>("state", { ...state, phase: "done", chunks: 0, result });
  }

  async #loadLeg(state: HostState): Promise<HandoverRecord> {
    const keys = Array.from({ length: state.chunks }, (_, i) => `r:${i}`);
    const got = await this.ctx.storage.get<string>(keys);
    return JSON.parse(keys.map((k) => got.get(k) ?? "").join("")) as HandoverRecord;
  }
}
