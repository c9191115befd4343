/**
 * @module edge/ground/dataset-limits — what a run's datasets may hold, from the Worker's vars (wrangler.toml `[vars]`),
 * with defaults that keep the Worker and the Durable Object inside Cloudflare's 128 MB per isolate:
 * - `AJET_MAX_INLINE_ROWS` (default 50,000) and `AJET_MAX_INLINE_BYTES` (default 4 MiB, the rows' JSON; the whole body is capped by AJET_MAX_BODY_BYTES, 8 MiB): inline
 *   `tasks` travel in the request body and are held by the Worker while it checks them; over → 413;
 * (A generator's `count` is bounded by `AJET_MAX_GENERATED_TASKS`, edge/ground/limits-config.ts; its tasks are made one at
 * a time when needed, so that bounds the run's size, not memory.)
 * - `AJET_MAX_DATASET_ROWS` (default 10,000,000): usable rows of one URL dataset (its index is 32 bytes per row in
 *   the Durable Object's SQLite); over → 400;
 * - `AJET_MAX_ROW_BYTES` (default 1 MiB): one row of a URL dataset (a task is one SQLite row, limit 2 MB); a longer
 *   line is refused as a rejected row.
 * A var that is not a whole number is ignored (the default applies) — never a 500; one outside its range is clamped
 * (edge/ground/caps.ts, the one table of caps, holds the defaults and ranges).
 */
import { CAPS, capsFrom } from "./caps.ts";
import type { WorkerVars } from "./env.ts";

/** The limits in force (see the module doc for each var and its default). */
export interface DatasetLimits {
  maxInlineRows: number;
  maxInlineBytes: number;
  maxDatasetRows: number;
  maxRowBytes: number;
}

/** The defaults (module doc). */
export const DEFAULT_DATASET_LIMITS: Readonly<DatasetLimits> = {
  maxInlineRows: CAPS.inlineRows.default,
  maxInlineBytes: CAPS.inlineBytes.default,
  maxDatasetRows: CAPS.datasetRows.default,
  maxRowBytes: CAPS.rowBytes.default,
};

/** The vars that set the limits. */
export type DatasetLimitVars = Pick<WorkerVars, "AJET_MAX_INLINE_ROWS" | "AJET_MAX_INLINE_BYTES" | "AJET_MAX_DATASET_ROWS" | "AJET_MAX_ROW_BYTES">;

/** The var names, by limit (what messages tell a user to raise). */
export const DATASET_LIMIT_VARS = {
  maxInlineRows: "AJET_MAX_INLINE_ROWS",
  maxInlineBytes: "AJET_MAX_INLINE_BYTES",
  maxDatasetRows: "AJET_MAX_DATASET_ROWS",
  maxRowBytes: "AJET_MAX_ROW_BYTES",
} as const satisfies Record<keyof DatasetLimits, keyof DatasetLimitVars>;

/** The limits from the Worker's vars (an unset or invalid var → its default; clamped into the caps table's range). */
export function datasetLimits(env: DatasetLimitVars): DatasetLimits {
  const caps = capsFrom(env);
  return { maxInlineRows: caps.inlineRows, maxInlineBytes: caps.inlineBytes, maxDatasetRows: caps.datasetRows, maxRowBytes: caps.rowBytes };
}

/** R2 bindings a dataset URL may name (`r2://BUCKET/KEY`): `AJET_DATASET_BUCKETS`, comma-separated, default `DATASETS`. */
export function datasetBuckets(env: Pick<WorkerVars, "AJET_DATASET_BUCKETS">): string[] {
  return (env.AJET_DATASET_BUCKETS ?? "DATASETS").split(",").map((s) => s.trim()).filter(Boolean);
}
