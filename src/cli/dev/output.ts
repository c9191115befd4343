/**
 * @module cli/dev/output — the dev command's I/O seam (`DevIo`: writers, TTY flag, interrupts, clock; the process
 * one and injectable ones for tests) and `ProgressPrinter`, which owns the refreshing TTY line so that other lines
 * (Worker warnings, messages) never land in the middle of it.
 */
import { progressKey, renderProgressLine, renderProgressPlain, shouldPrintPlain, type Progress } from "./render.ts";

/** Interrupt signals the command reacts to (exit codes 130 and 143). */
export type InterruptSignal = "SIGINT" | "SIGTERM";

/** Everything the dev command reads from or writes to the outside, besides the network. */
export interface DevIo {
  /** stdout, text as given (no newline added) */
  out(text: string): void;
  /** stderr, text as given */
  err(text: string): void;
  /** whether the progress stream (stdout, or stderr with --json) is a terminal */
  isTTY(json: boolean): boolean;
  /** terminal width for the progress line */
  columns(): number;
  /** subscribes to Ctrl-C / SIGTERM; @returns unsubscribe */
  onInterrupt(handler: (signal: InterruptSignal) => void): () => void;
  /** epoch ms */
  now(): number;
  /**
   * whether a person watches: stdin and stdout are terminals and no `CI` variable is set (`dev` then keeps the
   * Worker and the dashboard up after the run until Ctrl-C)
   */
  interactive(): boolean;
  /** ends the process at once with `code` (a second Ctrl-C); the process's exit handlers still run */
  quit(code: number): void;
}

/** The real process: stdout/stderr, SIGINT/SIGTERM handlers (installed only while the command runs). */
export const processIo: DevIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  isTTY: (json) => Boolean(json ? process.stderr.isTTY : process.stdout.isTTY),
  columns: () => {
    const width = process.stdout.columns || process.stderr.columns || 0;
    return width >= 40 ? width : 120; // 0 under some pseudo-terminals
  },
  onInterrupt(handler) {
    const onInt = () => handler("SIGINT");
    const onTerm = () => handler("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    return () => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    };
  },
  now: () => Date.now(),
  interactive: () => Boolean(process.stdin.isTTY && process.stdout.isTTY) && !process.env["CI"],
  quit: (code) => process.exit(code),
};

/**
 * An in-memory DevIo for tests: collects stdout/stderr, never a TTY (interactive when asked), `interrupt()` fires the
 * handlers, `quit` records its code (`quitCode`) instead of ending the process.
 */
export function memoryIo(o: { interactive?: boolean } = {}): DevIo & { stdout: string[]; stderr: string[]; quitCode: number | null; interrupt(signal?: InterruptSignal): void } {
  const handlers = new Set<(s: InterruptSignal) => void>();
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: DevIo & { stdout: string[]; stderr: string[]; quitCode: number | null; interrupt(signal?: InterruptSignal): void } = {
    stdout,
    stderr,
    quitCode: null,
    out: (t) => void stdout.push(t),
    err: (t) => void stderr.push(t),
    isTTY: () => false,
    columns: () => 120,
    onInterrupt(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    interrupt: (signal = "SIGINT") => handlers.forEach((h) => h(signal)),
    now: () => Date.now(),
    interactive: () => o.interactive ?? false,
    quit: (code) => {
      io.quitCode ??= code;
    },
  };
  return io;
}

const CLEAR_LINE = "\r\x1b[2K";

/** Writes progress (one refreshing line on a TTY, paced plain lines otherwise) and ordinary lines. */
export class ProgressPrinter {
  #shown = false;
  #last: { key: string; atMs: number } | null = null;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly columns: () => number,
  ) {}

  /** Prints one full line (clears the progress line first). */
  line(text: string): void {
    if (this.#shown) this.write(CLEAR_LINE);
    this.#shown = false;
    this.write(`${text}\n`);
  }

  /** Shows the progress: redraws the TTY line, or prints a plain line when it changed (or every 5 s). */
  progress(p: Progress, nowMs: number): void {
    if (this.tty) {
      this.write(`${CLEAR_LINE}${renderProgressLine(p, this.columns())}`);
      this.#shown = true;
      return;
    }
    const key = progressKey(p);
    if (!shouldPrintPlain(this.#last, key, nowMs)) return;
    this.#last = { key, atMs: nowMs };
    this.write(`${renderProgressPlain(p)}\n`);
  }

  /** Ends the TTY line (keeps its last state on screen). */
  done(): void {
    if (this.#shown) this.write("\n");
    this.#shown = false;
  }
}

/**
 * Lets at most `max` lines of one kind through (the kind: the line up to its first ` key=value` field), and counts
 * the rest — a drain makes the Worker log one `episode stale` warning per aborted claim.
 */
export class RepeatLimiter {
  readonly #seen = new Map<string, number>();

  constructor(private readonly max = 3) {}

  /** @returns true when the line should be printed */
  admit(line: string): boolean {
    const kind = line.replace(/ [\w.-]+=.*$/, "");
    const n = (this.#seen.get(kind) ?? 0) + 1;
    this.#seen.set(kind, n);
    return n <= this.max;
  }

  /** `[kind, lines not printed]` for every kind that went over the limit since the last flush; then starts over. */
  flush(): [string, number][] {
    const over = [...this.#seen].filter(([, n]) => n > this.max).map(([kind, n]): [string, number] => [kind, n - this.max]);
    this.#seen.clear();
    return over;
  }
}
