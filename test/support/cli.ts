/**
 * @module test/support/cli — runs the `ajet-edge` dispatcher (`main`) in-process with console.log/console.error
 * captured, so CLI tests can assert the exit code and exactly what was printed.
 */
import { vi } from "vitest";
import { main } from "../../src/cli/main.ts";

/** What one `main(argv)` call returned and printed: one entry per console call, its arguments joined by spaces. */
export interface MainRun {
  code: number;
  logs: string[];
  errors: string[];
}

/** Runs `main(argv)` with the console captured (restored afterwards, also when `main` throws). */
export async function runMain(argv: string[]): Promise<MainRun> {
  const logs: string[] = [];
  const errors: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void logs.push(args.join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void errors.push(args.join(" ")));
  try {
    return { code: await main(argv), logs, errors };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}
