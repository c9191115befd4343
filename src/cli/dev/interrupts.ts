/**
 * @module cli/dev/interrupts — how `ajet-edge dev` and `ajet-edge run` answer Ctrl-C and SIGTERM in each phase of
 * a run (cli/dev/run-dev): the first stops, the second quits.
 */
import type { InterruptSignal } from "./output.ts";

/**
 * Ctrl-C / SIGTERM, answered at once in every phase: the first one stops the start or the wait for the run (`first`:
 * in-flight requests are aborted too) and prints what happens next; during the keep-alive after the run it closes
 * the Worker and the emulators. A second one (or any while closing) quits at once (`io.quit`): the process's exit
 * handlers kill workerd's process group, and episodes still in flight are left to the server's discard timeout.
 */
export class Interrupts {
  readonly first = new AbortController();
  readonly force = new AbortController();
  signal: InterruptSignal | null = null;
  /** what the program is doing, for the line a Ctrl-C is answered with */
  phase: "starting" | "running" | "draining" | "summarizing" | "keeping" | "closing" = "starting";

  constructor(
    private readonly say: (line: string) => void,
    private readonly quit: (code: number) => void,
  ) {}

  on(signal: InterruptSignal): void {
    // while draining or closing, stopping cleanly is already under way: a Ctrl-C there is the second one
    if (this.signal === null && this.phase !== "closing" && this.phase !== "draining") {
      this.signal = signal;
      this.say(this.phase === "keeping" || this.phase === "summarizing"
        ? "stopping the Worker and the emulators… (Ctrl-C again to quit now)"
        : this.phase === "starting"
          ? "interrupted: stopping what was started… (Ctrl-C again to quit now)"
          : "interrupted: stopping the run, waiting for in-flight episodes to finish or abort (Ctrl-C again to quit now)…");
      this.first.abort(new Error(`interrupted (${signal})`));
      return;
    }
    this.signal ??= signal;
    this.say("quitting now");
    this.force.abort(new Error(`interrupted again (${signal})`));
    this.quit(this.exitCode);
  }

  get exitCode(): number {
    return this.signal === "SIGTERM" ? 143 : 130;
  }
}
