/**
 * @module test/unit/cli/interrupts — how `dev` and `run` answer Ctrl-C in each phase: at once with a line saying
 * what happens next; the first stops the start or the run (draining it), or closes after the run; a second one, or
 * any while draining or closing, quits at once with 130 (143 for SIGTERM).
 */
import { describe, expect, it } from "vitest";
import { Interrupts } from "../../../src/cli/dev/run-dev.ts";

function interrupts() {
  const said: string[] = [];
  const quit: number[] = [];
  const i = new Interrupts((line) => said.push(line), (code) => quit.push(code));
  return { i, said, quit };
}

describe("Interrupts", () => {
  it("while the run runs: the first Ctrl-C stops it cleanly and says so at once; the second quits now", () => {
    const { i, said, quit } = interrupts();
    i.phase = "running";
    i.on("SIGINT");
    expect(i.first.signal.aborted).toBe(true);
    expect(i.force.signal.aborted).toBe(false);
    expect(said).toEqual(["interrupted: stopping the run, waiting for in-flight episodes to finish or abort (Ctrl-C again to quit now)…"]);
    expect(quit).toEqual([]);
    i.phase = "draining";
    i.on("SIGINT");
    expect(i.force.signal.aborted).toBe(true);
    expect(said.at(-1)).toBe("quitting now");
    expect(quit).toEqual([130]);
  });

  it("while starting: stops what was started", () => {
    const { i, said } = interrupts();
    i.on("SIGTERM");
    expect(said).toEqual(["interrupted: stopping what was started… (Ctrl-C again to quit now)"]);
    expect(i.exitCode).toBe(143);
  });

  it("draining after the timeout or closing: the first Ctrl-C already quits", () => {
    for (const phase of ["draining", "closing"] as const) {
      const { i, quit } = interrupts();
      i.phase = phase;
      i.on("SIGINT");
      expect([phase, quit]).toEqual([phase, [130]]);
    }
  });

  it("after the run (summary, keep-alive): the first Ctrl-C closes the Worker and the emulators", () => {
    for (const phase of ["summarizing", "keeping"] as const) {
      const { i, said, quit } = interrupts();
      i.phase = phase;
      i.on("SIGINT");
      expect(i.first.signal.aborted).toBe(true);
      expect(said).toEqual(["stopping the Worker and the emulators… (Ctrl-C again to quit now)"]);
      expect(quit).toEqual([]);
    }
  });
});
