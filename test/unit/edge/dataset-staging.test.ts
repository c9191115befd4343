/**
 * Deleting a run's copies in R2 (edge/run/dataset-staging): every key under `staged/<runId>/`, page by page, none of
 * another run's; a failing bucket is logged as a warning naming the prefix, never thrown (the run's end never waits on
 * it, test/edge/dataset-staging shows it on miniflare's R2).
 */
import { describe, expect, it } from "vitest";
import { dropStagedCopies, dropStagedLater, type StagingBucket } from "../../../src/edge/run/dataset-staging.ts";

/** A bucket of `keys` whose `list` answers pages of `pageSize` keys (R2's cursor). */
function bucket(keys: string[], pageSize: number, failDelete = false): StagingBucket & { keys: Set<string> } {
  const held = new Set(keys);
  return {
    keys: held,
    createMultipartUpload: () => Promise.reject(new Error("not used")),
    list: async ({ prefix, cursor }) => {
      const all = [...held].filter((k) => k.startsWith(prefix)).sort();
      const from = cursor ? Number(cursor) : 0;
      const page = all.slice(from, from + pageSize);
      const truncated = from + pageSize < all.length;
      return { objects: page.map((key) => ({ key })), truncated, ...(truncated ? { cursor: String(from + pageSize) } : {}) };
    },
    delete: async (ks) => {
      if (failDelete) throw new Error("R2 is down");
      for (const k of ks) held.delete(k);
    },
  };
}

describe("a run's copies in R2 are deleted when it ends", () => {
  it("deletes every key under staged/<runId>/ page by page, and none of another run's", async () => {
    const mine = Array.from({ length: 5 }, (_, i) => `staged/run-1/d${i}`);
    const b = bucket([...mine, "staged/run-10/d0", "staged/run-2/d0", "cd/train.jsonl"], 2);
    // a listing that deletes as it goes: page cursors over a shrinking list must still reach every key
    expect(await dropStagedCopies(b, "run-1")).toBe(5);
    expect([...b.keys].sort()).toEqual(["cd/train.jsonl", "staged/run-10/d0", "staged/run-2/d0"]);
    expect(await dropStagedCopies(b, "run-1")).toBe(0);
  });

  it("logs what it deleted, and a failure as a warning naming the prefix, without throwing; no bucket is a no-op", async () => {
    const lines: string[] = [];
    const log = (level: string, message: string) => void lines.push(`${level}: ${message}`);
    await dropStagedLater(bucket(["staged/run-1/cd"], 10), "run-1", log);
    await dropStagedLater(bucket(["staged/run-1/cd"], 10, true), "run-1", log);
    await dropStagedLater(null, "run-1", log);
    expect(lines).toEqual([
      "info: deleted the run's 1 dataset copy in R2 (DATASETS/staged/run-1/)",
      "warn: could not delete the run's dataset copies in R2 (DATASETS/staged/run-1/): R2 is down; delete them by hand or with an R2 lifecycle rule on staged/",
    ]);
  });
});
