/**
 * @module emulator/server/lifecycle — config and engine lifecycle routes of the server: `/sync_train_config`,
 * `/sync_train_code`, `/start_engine`, `/stop_engine` (spec §3.2–3.5, §11.9, §11.18).
 */
import { dirname, join, resolve } from "node:path";
import { ENGINE, ServerText } from "../../protocol/index.ts";
import type { EngineSim } from "../engine/engine-sim.ts";
import type { EmulatorTimings } from "../options.ts";
import type { Rng } from "../rng.ts";
import { modelPathOf, parseTrainConfig, type TrainConfig } from "../train-config.ts";
import type { Outcome } from "./episodes.ts";
import type { ServerState } from "./state.ts";

/** What the lifecycle routes need. `engine` is null when an external engine drives the server. */
export interface LifecycleDeps {
  state: ServerState;
  engine: EngineSim | null;
  timings: EmulatorTimings;
  /** Base of `server_experiment_dir` and `temp_ajet_code_path` (the real server's working directory). */
  workDir: string;
  /** Source of fake process ids. */
  ids: Rng;
}

/** `POST /sync_train_config` (spec §3.2): OFFLINE only, last writer wins, model path stored. */
export function syncTrainConfig(state: ServerState, yamlText: string): Outcome<{ success: boolean }> {
  if (state.engineStatus !== ENGINE.OFFLINE) return { ok: false, status: 400, detail: ServerText.syncWhileRunning };
  state.trainConfigYaml = yamlText;
  state.trainingModelPath = modelPathOf(yamlText);
  return { ok: true, body: { success: true } };
}

/** `POST /sync_train_code` (spec §3.3): accepted and ignored after the real checks (OFFLINE, non-empty, zip magic). */
export function syncTrainCode(deps: LifecycleDeps, bytes: Uint8Array): Outcome<Record<string, unknown>> {
  if (deps.state.engineStatus !== ENGINE.OFFLINE) return { ok: false, status: 400, detail: ServerText.syncCodeWhileRunning };
  if (bytes.length === 0) return { ok: false, status: 400, detail: ServerText.syncCodeEmptyZip };
  const isZip = bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 0x03 || bytes[2] === 0x05);
  if (!isZip) return { ok: false, status: 400, detail: ServerText.syncCodeInvalidZip };
  const stamp = new Date(deps.state.clock.nowMs()).toISOString().replace(/\D/g, "").slice(0, 14);
  const path = join(deps.workDir, "ajet_temp", stamp, "ajet");
  return { ok: true, body: { success: true, message: ServerText.syncCodeOk, temp_ajet_code_path: path } };
}

/** The real server's experiment dir rule (`experiment_dir: "auto"` → `saved_experiments`). */
function experimentDirOf(config: TrainConfig, workDir: string): string {
  const name = config.experimentName;
  const dir = config.experimentDir;
  let base: string;
  if (dir === "auto") base = resolve(workDir, "saved_experiments");
  else if (name && !dir.includes(name)) base = resolve(workDir, dir);
  else base = dirname(resolve(workDir, dir));
  return join(base, name);
}

/**
 * `POST /start_engine` (spec §3.4): BOOTING at once; answers after `startEngineMs` (Ray start) with a fake pid;
 * the simulated engine reaches ROLLING `bootMs` later. A YAML that does not parse answers `success: false` and
 * leaves BOOTING (no rollback, spec §11.9).
 */
export async function startEngine(deps: LifecycleDeps): Promise<Outcome<Record<string, unknown>>> {
  const { state } = deps;
  if (state.engineStatus !== ENGINE.OFFLINE) return { ok: false, status: 400, detail: ServerText.startWhenNotOffline(state.engineStatus) };
  if (state.trainConfigYaml === null) return { ok: true, body: { success: false, error: ServerText.noTrainingConfig } };
  state.bootingStartTime = state.nowSeconds();
  state.setStatusDirect(ENGINE.BOOTING);
  let config: TrainConfig;
  try {
    config = parseTrainConfig(state.trainConfigYaml);
  } catch (e) {
    return { ok: true, body: { success: false, error: (e as Error).message } };
  }
  state.serverExperimentDir = experimentDirOf(config, deps.workDir);
  if (deps.timings.startEngineMs > 0) await state.clock.sleep(deps.timings.startEngineMs);
  const pid = deps.ids.int(2000, 60000);
  state.cleanup();
  state.trainingProcessPid = pid;
  state.trainConfig = config;
  state.runNumber += 1;
  state.bootingStartTime = state.nowSeconds();
  if ((state.engineStatus as string) !== ENGINE.BOOTING) state.setStatusDirect(ENGINE.BOOTING); // re-set after a racing stop, as the real server does
  deps.engine?.launch(config);
  return { ok: true, body: { success: true, pid } };
}

/**
 * `POST /stop_engine` (spec §3.5): kills the engine (`stopEngineMs` when one is running), wipes every record,
 * sets OFFLINE directly. `global_step`, detail, YAML, pool info and active clients are kept.
 */
export async function stopEngine(deps: LifecycleDeps): Promise<{ success: boolean; failure_reason: string }> {
  const { state } = deps;
  const wasRunning = state.engineStatus !== ENGINE.OFFLINE || (deps.engine?.isRunning ?? false);
  deps.engine?.kill();
  if (wasRunning && deps.timings.stopEngineMs > 0) await state.clock.sleep(deps.timings.stopEngineMs);
  state.clearEpisodes();
  state.trainingProcessPid = null;
  if (state.engineStatus !== ENGINE.OFFLINE) state.setStatusDirect(ENGINE.OFFLINE);
  return { success: true, failure_reason: "" };
}
