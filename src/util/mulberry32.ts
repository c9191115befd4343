/**
 * @module util/mulberry32 — the one seeded PRNG of the project (Tommy Ettinger's mulberry32, public domain): same
 * seed → same sequence in workerd and Node. Used by the scheduler (state kept in the run row), the Countdown task
 * generator and the emulator. No imports.
 */

/** 2^32. */
const TWO_POW_32 = 4294967296;

/**
 * One step, pure: the generator state is data (the scheduler stores it in its run row).
 * @param state an unsigned 32-bit integer
 * @returns `[value, nextState]` with `value` uniform in [0, 1)
 */
export function mulberry32Step(state: number): readonly [value: number, nextState: number] {
  const nextState = (state + 0x6d2b79f5) >>> 0;
  let t = nextState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [((t ^ (t >>> 14)) >>> 0) / TWO_POW_32, nextState];
}

/** A stream of uniform numbers in [0, 1) from a 32-bit seed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    const [value, next] = mulberry32Step(state);
    state = next;
    return value;
  };
}
