/** @module scheduler/rng — seeded randomness as data: a mulberry32 generator whose state lives in the run row, and 32-bit hashes. */
import { mulberry32Step } from "../util/mulberry32.ts";

/**
 * One step of mulberry32 (src/util/mulberry32.ts): pure, so the generator state is part of the scheduler state and
 * a replay with the same events gives the same numbers. Never `Math.random`.
 * @example const [u, next] = nextRandom(run.rngState); run.rngState = next;
 */
export const nextRandom = mulberry32Step;

/**
 * The 32-bit finaliser of MurmurHash3 (`fmix32`): an avalanche mix of one word.
 * @param x any number; only its low 32 bits are used
 * @returns an unsigned 32-bit integer
 */
export function mix32(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * FNV-1a over the UTF-16 code units of a string, finished with {@link mix32}.
 * @returns an unsigned 32-bit integer, stable across runtimes (used to key shuffles by dataset name)
 */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix32(h);
}

/**
 * Combines 32-bit words into one hash (order matters): `hashWords(seed, hashString(name), epoch)`.
 * @returns an unsigned 32-bit integer
 */
export function hashWords(...words: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const w of words) h = mix32(h ^ mix32(w + Math.imul(h, 31)));
  return h;
}

/**
 * The initial generator state for a run seed.
 * @param seed the run spec's `seed` (an integer in [0, 2^32))
 * @returns an unsigned 32-bit state
 */
export function seedRng(seed: number): number {
  return hashWords(seed, 0x5eed);
}
