/**
 * @module emulator/latency — the simulated generation latency of a chat call: its distribution (fixed, or lognormal
 * capped) as the options give it, and one draw from it with a seeded stream (rng.ts).
 */
import { z } from "zod";
import type { Rng } from "./rng.ts";

const ms = (what: string) => z.number().min(0).describe(`${what}, milliseconds`);

/** A latency distribution (see {@link sampleLatencyMs}). */
export const LatencySpecSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("fixed"), ms: ms("latency") }),
  z.object({
    kind: z.literal("lognormal"),
    medianMs: ms("median latency"),
    sigma: z.number().min(0).describe("log-space standard deviation"),
    maxMs: ms("latency cap"),
  }),
]);
/** A latency distribution in milliseconds: fixed, or lognormal (median, log-space `sigma`) capped at `maxMs`. */
export type LatencySpec = z.infer<typeof LatencySpecSchema>;

/** Draws one latency in ms from `spec` using `rng`. */
export function sampleLatencyMs(spec: LatencySpec, rng: Rng): number {
  if (spec.kind === "fixed") return Math.max(0, spec.ms);
  return Math.min(spec.maxMs, Math.max(0, spec.medianMs * Math.exp(spec.sigma * rng.normal())));
}
