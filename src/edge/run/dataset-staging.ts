/**
 * @module edge/run/dataset-staging — an http(s) dataset file served without Range support (python's `http.server`)
 * is copied once into the Worker's `DATASETS` R2 bucket (key `staged/<runId>/<dataset>`) by the background index pass,
 * and read from there (docs/security-and-limits.md, "A host without Range support"). The copy streams (R2 multipart
 * upload, parts of {@link STAGE_PART_BYTES}: memory stays bounded), is bounded in size ({@link STAGE_MAX_BYTES}) and
 * time (the host's first-byte and idle bounds, the pass's budget), and reports its progress in bytes. Without an R2
 * binding the file stays refused, the message naming both fixes. The copy lives as long as its run: it is deleted when
 * the run ends (finished, failed or stopped) or its creation fails ({@link dropStagedCopies}, best effort, logged).
 */
import { DatasetLoadError, httpByteSource, type HostTiming } from "../../tasks/index.ts";
import type { Issue } from "../ground/errors.ts";
import type { CreateRunInput, SourcePlan } from "./run-views.ts";

/** The R2 binding a no-Range file is copied into (it must also be an allowed dataset bucket, AJET_DATASET_BUCKETS). */
export const STAGING_BUCKET = "DATASETS";
/** The largest file copied, bytes (2 GiB): a larger one is refused naming the cap and the fix. */
export const STAGE_MAX_BYTES = 2 * 1024 ** 3;
/** Bytes per uploaded part (R2's least part size is 5 MiB, the last part excepted). */
export const STAGE_PART_BYTES = 8 * 1024 * 1024;

/** What is used of an R2 bucket binding to copy a file in. */
export interface StagingBucket {
  createMultipartUpload(key: string): Promise<{
    uploadPart(part: number, value: Uint8Array): Promise<{ partNumber: number; etag: string }>;
    complete(parts: { partNumber: number; etag: string }[]): Promise<unknown>;
    abort(): Promise<void>;
  }>;
  /** one page of the keys under `prefix` (R2 `list`: at most 1000 keys, `cursor` while `truncated`) */
  list(options: { prefix: string; cursor?: string }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>;
  /** deletes these keys (R2 takes up to 1000 at once; a missing key is no error) */
  delete(keys: string[]): Promise<void>;
}

/** The R2 key prefix of every copy a run made (`staged/<runId>/`). */
export function stagedPrefix(runId: string): string {
  return `staged/${runId}/`;
}

/** The R2 key a run's copy of dataset `name` is stored under. */
export function stagedKey(runId: string, name: string): string {
  return `${stagedPrefix(runId)}${encodeURIComponent(name)}`;
}

/** The most list pages {@link dropStagedCopies} deletes (a run has one copy per dataset: far fewer). */
const DROP_MAX_PAGES = 100;

/**
 * Deletes every copy run `runId` made in the staging bucket (all keys under {@link stagedPrefix}): it lists the
 * first page, deletes it and lists again (no cursor: deleted keys leave the listing), while the listing was truncated.
 * @returns the number of objects deleted (0 when the run staged nothing)
 * @throws whatever the bucket throws (callers run it best effort and log it: {@link dropStagedLater})
 */
export async function dropStagedCopies(bucket: StagingBucket, runId: string): Promise<number> {
  let deleted = 0;
  for (let pages = 0; pages < DROP_MAX_PAGES; pages++) {
    const page = await bucket.list({ prefix: stagedPrefix(runId) });
    const keys = page.objects.map((o) => o.key);
    if (keys.length) await bucket.delete(keys);
    deleted += keys.length;
    if (!page.truncated || keys.length === 0) break;
  }
  return deleted;
}

/**
 * Starts {@link dropStagedCopies} without waiting for it (a run's end never waits on R2): a failure is logged as a
 * warning naming the prefix, which stays until deleted by hand or by an R2 lifecycle rule on `staged/`. No-op
 * without a staging bucket. @returns the deletion's promise (never rejects), for callers and tests that wait
 */
export function dropStagedLater(bucket: StagingBucket | null, runId: string, log: (level: "info" | "warn", message: string) => void): Promise<void> {
  if (!bucket) return Promise.resolve();
  return dropStagedCopies(bucket, runId).then(
    (n) => {
      if (n > 0) log("info", `deleted the run's ${n} dataset cop${n === 1 ? "y" : "ies"} in R2 (${STAGING_BUCKET}/${stagedPrefix(runId)})`);
    },
    (err) => log("warn", `could not delete the run's dataset copies in R2 (${STAGING_BUCKET}/${stagedPrefix(runId)}): ${err instanceof Error ? err.message : String(err)}; delete them by hand or with an R2 lifecycle rule on staged/`),
  );
}

/**
 * Copies one no-Range file into R2, streaming. @returns the bytes copied
 * @throws DatasetLoadError (or its DatasetSlowError) naming the URL, what arrived and the fix: a host too slow, a
 *   file over {@link STAGE_MAX_BYTES}, an HTTP error
 */
export async function copyIntoR2(
  url: string,
  bucket: StagingBucket,
  key: string,
  deps: { fetch: typeof globalThis.fetch; timing: HostTiming; deadlineAtMs: number; progress(bytes: number): void; maxBytes?: number },
): Promise<number> {
  const maxBytes = deps.maxBytes ?? STAGE_MAX_BYTES;
  const body = await httpByteSource(url, { fetch: deps.fetch, timing: deps.timing }).stream(null, deps.deadlineAtMs);
  const upload = await bucket.createMultipartUpload(key);
  const parts: { partNumber: number; etag: string }[] = [];
  const reader = body.getReader();
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  let total = 0;
  const flush = async () => {
    const part = new Uint8Array(heldBytes);
    let at = 0;
    for (const c of held) {
      part.set(c, at);
      at += c.byteLength;
    }
    held = [];
    heldBytes = 0;
    parts.push(await upload.uploadPart(parts.length + 1, part));
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw new DatasetLoadError(`dataset ${url} is over ${maxBytes} bytes, the most copied into R2; serve it with Range support or put it in R2 yourself`);
      held.push(value);
      heldBytes += value.byteLength;
      if (heldBytes >= STAGE_PART_BYTES) await flush();
      deps.progress(total);
    }
    if (heldBytes > 0 || parts.length === 0) await flush();
    await upload.complete(parts);
    return total;
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    await upload.abort().catch(() => undefined);
    throw err instanceof DatasetLoadError ? err : new DatasetLoadError(`copying dataset ${url} into R2 failed: ${(err as Error).message}`);
  }
}

/** The file datasets of a run to copy into R2 first (marked by the quick check), by name. */
export function toStage(sources: Readonly<Record<string, SourcePlan>>): string[] {
  return Object.entries(sources).filter(([, s]) => s.type === "file" && s.stageFrom !== undefined).map(([name]) => name);
}

/**
 * Copies a run's files served without Range support into R2 (the background pass, before its index pass), each
 * copy's progress shown in the pending run's view. Never throws.
 * @param clearDatasets forgets the run's dataset rows (a copy failed: the creation ends)
 * @returns the issues (`datasets.N`, naming the URL and the fix) of a copy that failed; none when all were copied
 */
export async function stageRunFiles(
  input: CreateRunInput,
  deps: { bucket: StagingBucket | null; fetch: typeof globalThis.fetch; timing: HostTiming; deadlineAtMs: number; pending: { setProgress(text: string): void } },
  clearDatasets: () => void,
): Promise<Issue[]> {
  for (const name of toStage(input.sources)) {
    const plan = input.sources[name];
    const at = `datasets.${input.spec.datasets.findIndex((d) => d.name === name)}`;
    if (plan?.type !== "file" || !plan.stageFrom) continue;
    if (!deps.bucket) return [{ code: "invalid", path: at, message: `dataset ${plan.stageFrom} has no Range support and the Worker has no R2 bucket ${STAGING_BUCKET} to copy it into; serve it with Range support or put it in R2` }];
    let shownAt = 0;
    const progress = (bytes: number) => {
      if (Date.now() - shownAt < 1000) return;
      shownAt = Date.now();
      deps.pending.setProgress(`copying dataset ${name} (its host has no Range support) into R2: ${bytes} bytes so far`);
    };
    try {
      const bytes = await copyIntoR2(plan.stageFrom, deps.bucket, stagedKey(input.runId, name), { ...deps, progress });
      deps.pending.setProgress(`indexing dataset ${name} (${bytes} bytes copied into R2)`);
    } catch (err) {
      clearDatasets();
      return [{ code: "invalid", path: at, message: err instanceof Error ? err.message : String(err) }];
    }
  }
  return [];
}
