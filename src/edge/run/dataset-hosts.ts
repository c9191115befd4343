/**
 * @module edge/run/dataset-hosts — where a run's dataset bytes come from and within what bounds: the byte source of a
 * URL (R2 binding or http(s) with Range), a host's read deadlines, the staging bucket for files without Range, and
 * the Parquet index pass's total budget. All from the Worker's env (the caps table, edge/ground/caps).
 */
import { DatasetLoadError, httpByteSource, parseR2Url, r2ByteSource, type ByteSource, type HostTiming, type IndexBudget, type R2BucketLike } from "../../tasks/index.ts";
import { CAPS, capsFrom } from "../ground/caps.ts";
import { datasetBuckets } from "../ground/dataset-limits.ts";
import { bindingNamed, type Env } from "../ground/env.ts";
import { STAGING_BUCKET, type StagingBucket } from "./dataset-staging.ts";

/**
 * The byte source of a dataset URL: `r2://BUCKET/KEY` through the Worker's R2 binding BUCKET (one named in
 * `AJET_DATASET_BUCKETS`), anything else over http(s) with Range requests through `fetch` (the DO passes its
 * outbound-checked fetch: allowed hosts only, at every read).
 * @throws DatasetLoadError naming the bucket when it is not bound or not allowed
 */
export function openByteSource(url: string, env: Env, fetch: typeof globalThis.fetch = globalThis.fetch, background = false): ByteSource {
  const r2 = parseR2Url(url);
  if (!r2) {
    return httpByteSource(url, { fetch, timing: hostTiming(env, background) });
  }
  const allowed = datasetBuckets(env);
  const binding = bindingNamed(env, r2.bucket) as Partial<R2BucketLike> | undefined;
  if (!allowed.includes(r2.bucket) || typeof binding?.get !== "function" || typeof binding.head !== "function") {
    throw new DatasetLoadError(
      `r2://${r2.bucket}/… names no R2 bucket of this Worker; bound and allowed: ${allowed.join(", ") || "none"} ` +
        "(bind it in wrangler.toml [[r2_buckets]] and list it in AJET_DATASET_BUCKETS)",
    );
  }
  return r2ByteSource(binding as R2BucketLike, r2);
}

/** The bounds of a dataset host's reads (caps); the background pass has its total budget instead of the least rate. */
export function hostTiming(env: Env, background: boolean): HostTiming {
  const caps = capsFrom(env);
  return { firstByteMs: caps.firstByteSeconds * 1000, idleMs: caps.idleSeconds * 1000, minBytesPerSecond: background ? 0 : caps.minBytesPerSecond, rateGraceMs: 5000 };
}

/** The Worker's staging bucket (edge/run/dataset-staging) when bound and an allowed dataset bucket; else null (no-Range files are refused). */
export function stagingBucket(env: Env): StagingBucket | null {
  const binding = bindingNamed(env, STAGING_BUCKET) as Partial<StagingBucket> | undefined;
  return datasetBuckets(env).includes(STAGING_BUCKET) && typeof binding?.createMultipartUpload === "function" ? (binding as StagingBucket) : null;
}

/**
 * The Parquet index pass's total budget (the same as the JSONL stream's: `deadlineAtMs`), named by its cap: the
 * background pass's `indexBudgetSeconds` or the inline pass's `inlineIndexSeconds`. Undefined when unbounded.
 */
export function indexBudget(env: Env, deadlineAtMs: number, background: boolean): IndexBudget | undefined {
  if (!Number.isFinite(deadlineAtMs)) return undefined;
  const cap = background ? "indexBudgetSeconds" : "inlineIndexSeconds";
  return { deadlineAtMs, seconds: capsFrom(env)[cap], setting: CAPS[cap].var };
}
