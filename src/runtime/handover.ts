/**
 * @module runtime/handover — moving a running episode to its next holder before this holder's wall
 * (docs/design/long-episodes.md). At `gateAtMs` the call journal's gate closes (runtime/call-journal: no new LLM
 * call is sent); each call still open is finished by this holder; once none is open the journal goes to the next
 * holder (`hand`), which runs the function again from the start answering from it. A call still open when the hard
 * stop comes (`lastAtMs`) means no handover: the hard stop aborts the attempt as before (`time_limit`), since the
 * open call's answer exists only on this holder's connection and sending it again would train twice (a ghost sample).
 * Once `hand` was called its answer decides: `handed` and `unknown` (the RPC failed: the next holder may have the
 * episode) mean this holder sends nothing more; `declined` means it goes on (its hard stop then applies).
 */
import type { RolloutLogger } from "../sdk/contract.ts";
import type { CallJournal, JournalEntry } from "./call-journal.ts";

/** The next holder's answer to a handover. */
export type HandoverAnswer = "handed" | "unknown" | "declined";

/** When and to whom an episode is handed over. */
export interface HandoverPlan {
  /** the episode's journal: replays the earlier holders' calls, records this holder's */
  journal: CallJournal;
  /** epoch ms at which the gate closes: calls are no longer sent, the open ones are waited for */
  gateAtMs: number;
  /**
   * gives the episode to the next holder with every journal entry. Resolves `handed` when it holds the episode,
   * `declined` when it does not and will not; a throw counts as `unknown`
   */
  hand(entries: JournalEntry[]): Promise<HandoverAnswer>;
}

/** How long before the hard stop the calls open at the gate must have finished, ms (the handover's own RPC then fits). */
export const HANDOVER_MARGIN_MS = 1_000;

/** A started handover. */
export interface StartedHandover {
  /** resolves once the episode was handed (`handed` or `unknown`); never otherwise */
  readonly handed: Promise<void>;
  /** the answer when `hand` was called and did not decline, else null (call after {@link StartedHandover.cancel}) */
  settled(): Promise<"handed" | "unknown" | null>;
  /** no handover any more unless `hand` was already called (the function is over) */
  cancel(): void;
}

/**
 * Runs the handover of {@link HandoverPlan} in the background.
 * @param o.lastAtMs epoch ms of this holder's hard stop; the calls open at the gate must end {@link HANDOVER_MARGIN_MS} before it
 * @param o.stopped whether the episode already stopped (then nothing is handed: its calls may have been cut)
 */
export function startHandover(
  plan: HandoverPlan,
  o: { lastAtMs: number; now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void>; log: RolloutLogger; stopped(): boolean },
): StartedHandover {
  const cancel = new AbortController();
  let handing: Promise<HandoverAnswer> | null = null;
  let done!: () => void;
  const handed = new Promise<void>((resolve) => (done = resolve));
  const wait = (ms: number) => o.sleep(Math.max(0, ms), cancel.signal).then(() => true, () => false);
  void (async () => {
    if (!(await wait(plan.gateAtMs - o.now())) || cancel.signal.aborted || o.stopped()) return;
    plan.journal.closeGate();
    const open = plan.journal.inFlight;
    o.log.info("handover: no new LLM call is sent; waiting for the calls in flight", { inFlight: open });
    const idle = await Promise.race([plan.journal.idle().then(() => true), wait(o.lastAtMs - HANDOVER_MARGIN_MS - o.now()).then(() => false)]);
    if (cancel.signal.aborted || o.stopped()) return;
    if (!idle) {
      o.log.warn("handover: an LLM call was still open at the last moment; the episode stops at this holder's wall", { inFlight: plan.journal.inFlight });
      return;
    }
    const entries = plan.journal.entries();
    handing = plan.hand(entries).catch((err: unknown) => {
      o.log.warn("handover: the next holder did not answer; this holder sends nothing more (the run's heartbeat lease settles it)", { error: String(err) });
      return "unknown" as const;
    });
    const answer = await handing;
    o.log.info(`handover: ${answer}`, { calls: entries.length, waitedForOpenCalls: open });
    if (answer !== "declined") done();
  })();
  return {
    handed,
    settled: async () => {
      if (!handing) return null;
      const answer = await handing;
      return answer === "declined" ? null : answer;
    },
    cancel: () => cancel.abort(),
  };
}
