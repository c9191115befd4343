/**
 * @module client/agree — a client's vote for the weight sync in the agree modes (spec §3.14, §7.3; llm-routes §10):
 * its entry in the server's active list, one vote, and the Python client's vote-and-wait loop. Functions over a
 * {@link ClientCore}; `SwarmClient` exposes each as a method.
 */
import { ENGINE, endpoints, isAgreeSyncWeightMethod, isNotInActiveList, isRollingState, ServerText, type ActiveSwarmClient } from "../protocol/index.ts";
import type { ClientCore } from "./engine-control.ts";
import { SwarmAbortError, SwarmInputError, SwarmServerOfflineError, isRetryableError } from "./errors.ts";
import { pause, remainingMs, throwIfStopped, withJitter, type WaitOptions } from "./timing.ts";
import type { SwarmRequestOptions } from "./transport.ts";
import type { AgreeSyncWeightResult } from "./types.ts";

/** See `SwarmClient.getActiveClientEntry`. */
export async function getActiveClientEntry(c: ClientCore, options?: SwarmRequestOptions): Promise<ActiveSwarmClient | null> {
  const pool = await c.call("getRolloutStat", undefined, options);
  return pool.swarm_client_instruction?.active_clients.find((a) => a.client_uuid === c.clientUuid) ?? null;
}

/** See `SwarmClient.agreeSyncWeight`. */
export async function agreeSyncWeight(c: ClientCore, options?: SwarmRequestOptions): Promise<AgreeSyncWeightResult> {
  assertAgreeSupported(c);
  const res = await c.call("agreeSyncWeight", { client_uuid: c.clientUuid }, options);
  if (res.success) return { agreed: true };
  const reason = isNotInActiveList(res.failure_reason) ? "notActive" : res.failure_reason === ServerText.clientUuidRequired ? "clientUuidRequired" : "other";
  return { agreed: false, reason, failureReason: res.failure_reason };
}

/** See `SwarmClient.agreeSyncWeightAndWait`. */
export async function agreeSyncWeightAndWait(c: ClientCore, options: WaitOptions = {}): Promise<boolean> {
  assertAgreeSupported(c);
  const start = await c.getEngineStatus({ signal: options.signal });
  if (!isRollingState(start.status)) return false;
  const what = "agreeSyncWeight";
  for (;;) {
    throwIfStopped(c.clock, options, what, start.status);
    try {
      const r = await agreeSyncWeight(c, { signal: options.signal, timeoutMs: Math.max(1, Math.min(endpoints.agreeSyncWeight.timeoutMs, remainingMs(c.clock, options))) });
      if (r.agreed) break;
      c.logger.warn(`agree_sync_weight refused: ${r.failureReason}`);
    } catch (err) {
      if (err instanceof SwarmAbortError || !isRetryableError(err)) throw err;
      c.logger.warn(`agree_sync_weight failed: ${(err as Error).message}`);
    }
    await pause(c.clock, c.backoff.agreeRetryMs, options, what, start.status);
  }
  for (;;) {
    const snap = await c.getEngineStatusOrCannotConnect({ signal: options.signal });
    if (snap.status === ENGINE.ROLLING_POST || snap.status === ENGINE.WEIGHT_SYNCING) return true;
    if (snap.globalStep !== null && start.globalStep !== null && snap.globalStep > start.globalStep) return true;
    if (snap.status === ENGINE.OFFLINE) throw new SwarmServerOfflineError([ENGINE.ROLLING_POST, ENGINE.WEIGHT_SYNCING]);
    await pause(c.clock, withJitter(c.backoff.statusPollIntervalMs, c.backoff.jitterRatio, c.clock.random), options, what, snap.status);
  }
}

/** @throws SwarmInputError when the client's synced job is in a mode other than the two agree modes */
function assertAgreeSupported(c: ClientCore): void {
  const method = c.job?.sampleCollectionMethod;
  if (method !== undefined && !isAgreeSyncWeightMethod(method)) {
    throw new SwarmInputError(
      "sampleCollectionMethod",
      `is ${method}; agree_sync_weight needs rollout_until_any_client_agree_sync_weight or rollout_until_all_clients_agree_sync_weight (the server answers 500 in any other mode)`,
    );
  }
}
