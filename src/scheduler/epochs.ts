/**
 * @module scheduler/epochs — seeded passes over one dataset source: a pure permutation of (seed, source, epoch, n)
 * computed one index at a time (nothing large is stored), and the per-source cursor that walks it.
 */
import { hashString, hashWords, mix32 } from "./rng.ts";

/** Where a source's walk stands: `epoch` is the 0-based pass, `position` the next slot of that pass's permutation. */
export interface SourceCursor {
  /** 0-based pass number; `epoch >= epochs` means the source is exhausted */
  epoch: number;
  /** next position in this pass's permutation, 0..taskCount-1 */
  position: number;
}

/** One task taken from a source: its row index in the dataset and the pass it belongs to. */
export interface TakenTask {
  taskIndex: number;
  epoch: number;
  /** the re-run generation its group opens with (a task deferred after its group was cut); absent: 0 */
  rerun?: number;
}

/** Feistel rounds: four balanced rounds with a strong round function give a well-mixed bijection. */
const ROUNDS = 4;
/** The largest dataset size the permutation supports (2^31 rows). */
export const MAX_TASK_COUNT = 2 ** 31;

/**
 * The shuffle key of one pass: different for every seed, source name and epoch, so each epoch has its own order,
 * like the reference readers' per-pass `random.shuffle` (spec §6.1) but reproducible from three small values.
 * @returns an unsigned 32-bit key for {@link permuteIndex}
 */
export function permutationKey(seed: number, source: string, epoch: number): number {
  return hashWords(seed, hashString(source), epoch);
}

/**
 * Maps a position of a pass to a dataset row: a bijection on [0, n) (a balanced Feistel network on the smallest
 * even power of two ≥ n, with cycle walking back into range). O(1) expected per call; no array of n is built.
 * @param position 0 ≤ position < n
 * @param n the source's task count, 1 ≤ n ≤ {@link MAX_TASK_COUNT}
 * @param key from {@link permutationKey}
 * @returns the row index (0 ≤ index < n) served at that position
 * @throws RangeError when `position` or `n` is out of range
 */
export function permuteIndex(position: number, n: number, key: number): number {
  if (!Number.isInteger(n) || n < 1 || n > MAX_TASK_COUNT) throw new RangeError(`task count must be an integer in [1, 2^31], got ${n}`);
  if (!Number.isInteger(position) || position < 0 || position >= n) {
    throw new RangeError(`position must be an integer in [0, ${n}), got ${position}`);
  }
  if (n === 1) return 0;
  const bits = Math.ceil(Math.log2(n));
  const half = Math.ceil(bits / 2);
  let x = feistel(position, half, key);
  while (x >= n) x = feistel(x, half, key); // cycle walking: the cycle through `position` returns below n
  return x;
}

function feistel(value: number, half: number, key: number): number {
  const mask = (1 << half) - 1;
  const scale = 2 ** half;
  let left = Math.floor(value / scale) & mask;
  let right = value & mask;
  for (let round = 0; round < ROUNDS; round++) {
    const f = mix32(right ^ mix32(key + Math.imul(round + 1, 0x9e3779b9))) & mask;
    [left, right] = [right, (left ^ f) & mask];
  }
  return left * scale + right;
}

/** True once a source has served all of its `epochs` passes. */
export function isExhausted(cursor: SourceCursor, epochs: number): boolean {
  return cursor.epoch >= epochs;
}

/**
 * Takes the next task of a source.
 * @param cursor the source's cursor (not mutated)
 * @param taskCount the source's number of tasks (≥ 1)
 * @param epochs passes to serve in total (the run spec's `epochs`)
 * @param seed the run spec's `seed`; `source` the dataset name
 * @returns the task and the advanced cursor (epoch+1 at the end of a pass), or `null` when exhausted
 */
export function takeTask(
  cursor: SourceCursor,
  taskCount: number,
  epochs: number,
  seed: number,
  source: string,
): { task: TakenTask; cursor: SourceCursor } | null {
  if (isExhausted(cursor, epochs)) return null;
  const taskIndex = permuteIndex(cursor.position, taskCount, permutationKey(seed, source, cursor.epoch));
  const task = { taskIndex, epoch: cursor.epoch };
  const position = cursor.position + 1;
  return { task, cursor: position >= taskCount ? { epoch: cursor.epoch + 1, position: 0 } : { epoch: cursor.epoch, position } };
}
