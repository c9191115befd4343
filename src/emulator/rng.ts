/**
 * @module emulator/rng — seeded, reproducible randomness: a small PRNG (mulberry32), string hashing for
 * per-call streams (so results do not depend on request interleaving), 32-hex ids and a standard normal sample.
 */
import { mulberry32 } from "../util/mulberry32.ts";

/** A stream of uniform numbers in [0, 1). */
export interface Rng {
  next(): number;
  /** Integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
  /** 32 lowercase hex chars, like Python's `uuid4().hex`. */
  hex32(): string;
  /** Standard normal sample (Box–Muller). */
  normal(): number;
}

/** FNV-1a 32-bit hash of a string (stable across runs and platforms). */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Creates a mulberry32 stream from a 32-bit seed. */
export function createRng(seed: number): Rng {
  const next = mulberry32(seed);
  const rng: Rng = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
    hex32() {
      let s = "";
      for (let i = 0; i < 4; i++) s += Math.floor(next() * 2 ** 32).toString(16).padStart(8, "0");
      // uuid4().hex carries the version nibble 4 and the variant bits 10xx, keep that shape.
      const variant = "89ab"[Math.floor(next() * 4)] as string;
      return s.slice(0, 12) + "4" + s.slice(13, 16) + variant + s.slice(17);
    },
    normal() {
      const u = Math.max(next(), 1e-12);
      const v = next();
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
  return rng;
}

/** A stream derived from a seed and any number of keys, e.g. `deriveRng(seed, episodeUuid, callIndex)`. */
export function deriveRng(seed: number, ...keys: Array<string | number>): Rng {
  return createRng(hashString(`${seed}|${keys.join("|")}`));
}
