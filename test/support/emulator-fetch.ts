/**
 * @module test/support/emulator-fetch — a fetch that answers from an in-process emulator's `app.fetch` (no socket)
 * and moves the emulator's manual clock while the handler waits on it, so no test waits on real time.
 */
import type { Emulator, ManualClock } from "../../src/emulator/index.ts";

/**
 * The emulator's app as a client fetch: sends the request to `emu.app.fetch`, runs due timers (`clock.flush()`),
 * then advances the manual clock `stepMs` milliseconds at a time until the handler answers (start/stop engine wait on
 * the clock). Resolves with the handler's response; rejects as the handler does.
 */
export function advancingFetch(emu: Emulator, clock: ManualClock, stepMs = 5): (input: string, init: RequestInit) => Promise<Response> {
  return async (input, init) => {
    let done = false;
    const pending = Promise.resolve(emu.app.fetch(new Request(input, init))).finally(() => (done = true));
    await clock.flush();
    while (!done) await clock.advance(stepMs);
    return pending;
  };
}
