/**
 * @module edge/ground/transcripts — episode transcripts in R2 (binding `TRANSCRIPTS`, issue 12 §2). One object per
 * attempt, `transcripts/<runId>/<episodeKey>/<attempt>.json` (the episode key URI-encoded), cut to the size cap
 * (`TRANSCRIPT_MAX_BYTES`) by runtime/transcript `capTranscript`, with its expiry instant in the object's custom
 * metadata (`TRANSCRIPT_RETENTION_DAYS`): an expired record is never served and is deleted when asked for. Deployed
 * buckets should also carry an R2 lifecycle rule with the same number of days, so records nobody reads go too.
 */
import { capTranscript, DEFAULT_TRANSCRIPT_LIMITS, type EpisodeTranscript, type TranscriptLimits, type TranscriptSink } from "../../runtime/transcript.ts";
import type { Env, WorkerVars } from "./env.ts";

/** Days a transcript is kept when `TRANSCRIPT_RETENTION_DAYS` is not set. */
export const DEFAULT_RETENTION_DAYS = 14;

/** The transcript settings of a Worker, from its vars (bad values fall back to the defaults). */
export function transcriptSettings(env: Pick<WorkerVars, "TRANSCRIPT_RETENTION_DAYS" | "TRANSCRIPT_MAX_BYTES">): { retentionMs: number; limits: TranscriptLimits } {
  const days = Number(env.TRANSCRIPT_RETENTION_DAYS ?? DEFAULT_RETENTION_DAYS);
  const maxBytes = Number(env.TRANSCRIPT_MAX_BYTES ?? DEFAULT_TRANSCRIPT_LIMITS.maxBytes);
  return {
    retentionMs: (Number.isFinite(days) && days > 0 ? days : DEFAULT_RETENTION_DAYS) * 86_400_000,
    limits: { ...DEFAULT_TRANSCRIPT_LIMITS, maxBytes: Number.isInteger(maxBytes) && maxBytes >= 1024 ? maxBytes : DEFAULT_TRANSCRIPT_LIMITS.maxBytes },
  };
}

const prefixOf = (runId: string, episodeKey: string) => `transcripts/${runId}/${encodeURIComponent(episodeKey)}/`;

/** The R2 sink the queue consumer hands to the runtime; undefined when the Worker has no `TRANSCRIPTS` binding. */
export function r2TranscriptSink(env: Env, now: () => number = Date.now): TranscriptSink | undefined {
  const bucket = env.TRANSCRIPTS;
  if (!bucket) return undefined;
  const { retentionMs, limits } = transcriptSettings(env);
  return {
    async save(record: EpisodeTranscript) {
      const body = capTranscript(record, limits);
      await bucket.put(`${prefixOf(record.runId, record.episodeKey)}${record.attempt}.json`, body, {
        httpMetadata: { contentType: "application/json" },
        customMetadata: { expiresAtMs: String(now() + retentionMs) },
      });
    },
  };
}

/** Why a transcript could not be served. */
export type TranscriptMiss = { kind: "none" } | { kind: "expired"; expiredAtMs: number } | { kind: "disabled" };

/**
 * The stored record of an episode: the given attempt, else the latest one. Expired records are deleted, not served.
 * @returns the record's JSON text, or why there is none
 */
export async function readTranscript(env: Env, runId: string, episodeKey: string, attempt: number | undefined, nowMs = Date.now()): Promise<{ text: string; attempt: number } | TranscriptMiss> {
  const bucket = env.TRANSCRIPTS;
  if (!bucket) return { kind: "disabled" };
  const prefix = prefixOf(runId, episodeKey);
  let n = attempt;
  if (n === undefined) {
    const listed = await bucket.list({ prefix, limit: 100 });
    const attempts = listed.objects.map((o) => Number(o.key.slice(prefix.length).replace(/\.json$/, ""))).filter(Number.isInteger);
    if (attempts.length === 0) return { kind: "none" };
    n = Math.max(...attempts);
  }
  const obj = await bucket.get(`${prefix}${n}.json`);
  if (!obj) return { kind: "none" };
  const expiresAtMs = Number(obj.customMetadata?.["expiresAtMs"] ?? Infinity);
  if (expiresAtMs <= nowMs) {
    await obj.body.cancel();
    await bucket.delete(`${prefix}${n}.json`);
    return { kind: "expired", expiredAtMs: expiresAtMs };
  }
  return { text: await obj.text(), attempt: n };
}
