/** Transcripts in R2 (miniflare's, inside workerd): the retention setting and the API's answers. */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readTranscript, r2TranscriptSink, transcriptSettings } from "../../src/edge/transcripts.ts";
import type { EpisodeTranscript } from "../../src/runtime/transcript.ts";

const record = (runId: string, attempt: number, content: string): EpisodeTranscript => ({
  v: 1, runId, episodeKey: "gsm8k/0/3#1", attempt, taskId: "t", functionName: "f", episodeType: "train", query: "q", claimedAtMs: 0,
  finishedAtMs: 1, result: "ended", outcome: { kind: "end", reward: 1 }, reward: 1, outputs: {}, llm: [{ swarm: "default", startedAtMs: 0, endedAtMs: 1, status: 200, messages: [{ role: "user", content }], reply: null }],
  logs: [], error: null, truncated: false,
});

describe("transcripts in R2", () => {
  it("are cut to TRANSCRIPT_MAX_BYTES when stored", async () => {
    const sink = r2TranscriptSink({ ...env, TRANSCRIPT_MAX_BYTES: "4096" })!;
    await sink.save(record("run-cap", 1, "x".repeat(50_000)));
    const got = await readTranscript(env, "run-cap", "gsm8k/0/3#1", undefined);
    expect("text" in got && new TextEncoder().encode(got.text).length).toBeLessThanOrEqual(4096);
    expect("text" in got && (JSON.parse(got.text) as EpisodeTranscript).truncated).toBe(true);
  });

  it("serve the latest attempt by default and a given one on ?attempt=", async () => {
    const sink = r2TranscriptSink(env)!;
    await sink.save(record("run-att", 1, "first"));
    await sink.save(record("run-att", 2, "second"));
    const key = encodeURIComponent("gsm8k/0/3#1");
    const latest = (await (await SELF.fetch(`http://w/runs/run-att/episodes/${key}`)).json()) as EpisodeTranscript;
    expect(latest.attempt).toBe(2);
    const first = (await (await SELF.fetch(`http://w/runs/run-att/episodes/${key}?attempt=1`)).json()) as EpisodeTranscript;
    expect((first.llm[0]!.messages[0] as { content: string }).content).toBe("first");
    const bad = await SELF.fetch(`http://w/runs/run-att/episodes/${key}?attempt=zero`);
    expect(bad.status).toBe(400);
  });

  it("past TRANSCRIPT_RETENTION_DAYS are not served (404 naming the setting) and are deleted", async () => {
    const days = transcriptSettings({ TRANSCRIPT_RETENTION_DAYS: "2" }).retentionMs / 86_400_000;
    expect(days).toBe(2);
    const longAgo = Date.now() - 3 * 86_400_000;
    await r2TranscriptSink({ ...env, TRANSCRIPT_RETENTION_DAYS: "2" }, () => longAgo)!.save(record("run-old", 1, "old"));
    const res = await SELF.fetch(`http://w/runs/run-old/episodes/${encodeURIComponent("gsm8k/0/3#1")}`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { message: string; issues: Array<{ message: string }> } };
    expect(body.error.message).toContain("expired");
    expect(body.error.issues[0]!.message).toContain("TRANSCRIPT_RETENTION_DAYS");
    expect(await env.TRANSCRIPTS!.list({ prefix: "transcripts/run-old/" })).toMatchObject({ objects: [] });
    // a fresh one with the same settings is served
    await r2TranscriptSink({ ...env, TRANSCRIPT_RETENTION_DAYS: "2" })!.save(record("run-new", 1, "new"));
    expect((await SELF.fetch(`http://w/runs/run-new/episodes/${encodeURIComponent("gsm8k/0/3#1")}`)).status).toBe(200);
  });
});
