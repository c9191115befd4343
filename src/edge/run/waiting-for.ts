/**
 * @module edge/run/waiting-for — what a run waits for, in plain words (`GET /runs/:id` → `waitingFor`, issue 8 §2): the
 * engine booting, someone else to start it, a weight sync, episodes to claim, the drain — or null when episodes are
 * simply running. Pure: the run's status view, its engine notes and the instant are inputs.
 */
import { ENGINE } from "../../protocol/index.ts";
import type { RunStatus } from "../../scheduler/index.ts";
import type { EngineNote } from "../swarm-server/engine-note.ts";

/** One line, or null when nothing holds the run up (or it is finished). */
export function waitingFor(
  status: Pick<RunStatus, "phase" | "stopReason" | "engines" | "gateOpen" | "currentWindow" | "episodes">,
  notes: Readonly<Record<string, EngineNote>>,
  swarmUrls: Readonly<Record<string, string>>,
  failure: string | null,
  nowMs: number,
): string | null {
  if (status.phase === "finished") return null;
  const inFlight = status.episodes.inFlight;
  if (status.phase === "draining") {
    const why = status.stopReason === "failed" && failure ? `the run failed (${failure})` : "the run was stopped";
    return `${why}: waiting for ${inFlight} in-flight episode${inFlight === 1 ? "" : "s"} to finish or be aborted`;
  }
  for (const e of status.engines) {
    const url = swarmUrls[e.swarm] ?? e.swarm;
    const note = notes[e.swarm];
    switch (note?.kind) {
      case "starting":
        return `engine start on ${url}: syncing this run's train config and calling /start_engine`;
      case "booting":
        return `engine booting on ${url} for ${Math.max(0, Math.round((nowMs - note.sinceMs) / 1000))} s (the run fails if it is not ROLLING ${Math.round((note.timeoutAtMs - note.sinceMs) / 1000)} s after the start)`;
      case "waitingForStart":
        return `the engine on ${url} is OFFLINE and this run's engine policy is start: "never": start it on the server (or create the run with engine.start "if-offline")`;
      case "stoppedElsewhere":
        return `the engine on ${url} was stopped by another client (or its training process exited): start it again, or stop this run`;
      case "unreachable":
        return `the swarm server ${url} cannot be reached (${note.error}); retrying`;
      default:
        break;
    }
    if (e.engineStatus === ENGINE.WEIGHT_SYNCING || e.engineStatus === ENGINE.ROLLING_POST) {
      return `weight sync on ${url}: the engine trains step ${e.globalStep ?? "?"}; the next window opens when it is ROLLING again`;
    }
    if (e.engineStatus === ENGINE.BOOTING) return `engine booting on ${url}`;
    if (e.engineStatus === ENGINE.OFFLINE) return `the engine on ${url} is OFFLINE`;
    if (e.engineStatus !== ENGINE.ROLLING) return `the engine on ${url} is ${e.engineStatus}`;
  }
  if (status.phase === "finishing" || status.currentWindow?.waitingForEngine) {
    return "weight sync: every episode of the window is resolved; waiting for the engine to train it and move to the next step";
  }
  if (inFlight === 0 && status.episodes.queued > 0) {
    return "nothing to claim: the server has no free episode for this run right now; claims are retried with back-off";
  }
  return null;
}
