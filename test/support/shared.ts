/**
 * @module test/support/shared — locates the read-only reference material in `../shared` (CI has it, a user's
 * fresh clone does not). Tests that need it use `describeShared`, which skips with a clear message when absent.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
/** Absolute path of `../shared` relative to the project root (override with AJET_SHARED_DIR). */
export const SHARED_DIR = resolve(process.env.AJET_SHARED_DIR ?? resolve(here, "../../../shared"));
export const hasShared = existsSync(resolve(SHARED_DIR, "spec"));

/**
 * `describe` that runs only when `../shared` exists. Otherwise the suite body is NOT executed (vitest runs the body
 * of a skipped suite to collect it, and bodies read the shared files), and one skipped test says why.
 */
export function describeShared(name: string, fn: () => void): void {
  if (hasShared) {
    describe(name, fn);
    return;
  }
  console.warn(`[ajet-edge tests] skipping "${name}": ${SHARED_DIR} not found (reference data CI provides; set AJET_SHARED_DIR to point elsewhere)`);
  describe(name, () => it.skip(`skipped: ${SHARED_DIR} not found; it holds the reference data (spec transcript, GSM8K) that CI provides`, () => {}));
}

/** Path inside `../shared`, e.g. `sharedPath("data/gsm8k/test.jsonl")`. */
export function sharedPath(rel: string): string {
  return resolve(SHARED_DIR, rel);
}

/** One HTTP exchange of `spec/real-server-transcript.jsonl`. */
export interface TranscriptExchange {
  channel: "http";
  endpoint: string; // "POST /claim_episode"
  variant: string;
  probe_label: string | null;
  caller: string;
  request: { query: unknown; headers: Record<string, string> | null; body: unknown };
  response: { status: number; headers: Record<string, string>; body: unknown };
}

/** The HTTP exchanges of the recorded real-server transcript, in recording order. */
export function loadTranscript(): TranscriptExchange[] {
  return readFileSync(sharedPath("spec/real-server-transcript.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { channel: string })
    .filter((e): e is TranscriptExchange => e.channel === "http");
}
