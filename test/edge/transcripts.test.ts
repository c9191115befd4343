/** Transcripts in R2 (miniflare's, inside workerd): the retention setting and the API's answers. */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readTranscript, r2TranscriptSink, transcriptSettings } from "../../src/edge/ground/transcripts.ts";
import type { EpisodeTranscript } from "../../src/runtime/transcript.ts";
import { authHeaders } from "./support.ts";

const record = (runId: string, attempt: number, content: string): EpisodeTranscript => ({
  v: 1, runId, episodeKey: "gsm8k/0/3#1", attempt, taskId: "t", functionName: "f", episodeType: "train", query: "q", claimedAtMs: 0,
  finishedAtMs: 1, result: "ended", outcome: { kind: "end", reward: 1 }, reward: 1, outputs: {}, llm: [{ swarm: "default", startedAtMs: 0, endedAtMs: 1, status: 200, messages: [{ role: "user", content }], reply: null }],
  logs: [], error: null, truncated: false,
});

describe("dashboard sign-in (session cookie)", () => {
  const form = (token: string) => new URLSearchParams({ token, next: "/runs/run-x" });

  it("a right token becomes an HttpOnly, Secure, SameSite=Strict cookie; a wrong one gets the form back with a 401", async () => {
    const wrong = await SELF.fetch("http://w/login", { method: "POST", body: form("not-the-token-at-all-123"), redirect: "manual" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    expect(await wrong.text()).toContain("matches neither AJET_API_TOKEN nor AJET_READ_TOKEN");
    const right = await SELF.fetch("http://w/login", { method: "POST", body: form(env.AJET_READ_TOKEN!), redirect: "manual" });
    expect(right.status).toBe(303);
    expect(right.headers.get("location")).toBe("/runs/run-x");
    const cookie = right.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^ajet_session=/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("Secure");
    expect(cookie).toContain("SameSite=Strict");
  });

  it("the cookie of the read token may read (a 404 for an unknown run, not a 401) but not stop a run (403)", async () => {
    const cookie = { cookie: `ajet_session=${encodeURIComponent(env.AJET_READ_TOKEN!)}` };
    expect((await SELF.fetch("http://w/runs/run-none/metrics", { headers: cookie })).status).toBe(404);
    expect((await SELF.fetch("http://w/runs/run-none/metrics")).status).toBe(401);
    expect((await SELF.fetch("http://w/runs/run-none/metrics", { headers: { cookie: "ajet_session=wrong-token-0123456789" } })).status).toBe(401);
    expect((await SELF.fetch("http://w/runs/run-none/stop", { method: "POST", headers: cookie })).status).toBe(403);
  });

  it("sends a browser without a session to the sign-in form; the form and the assets need no token", async () => {
    const page = await SELF.fetch("http://w/runs/run-none", { headers: { accept: "text/html" }, redirect: "manual" });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/login?next=%2Fruns%2Frun-none");
    expect((await SELF.fetch("http://w/login")).status).toBe(200);
    expect((await SELF.fetch("http://w/assets/uplot.css")).status).toBe(200);
  });
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
    const latest = (await (await SELF.fetch(`http://w/runs/run-att/episodes/${key}`, { headers: authHeaders() })).json()) as EpisodeTranscript;
    expect(latest.attempt).toBe(2);
    const first = (await (await SELF.fetch(`http://w/runs/run-att/episodes/${key}?attempt=1`, { headers: authHeaders() })).json()) as EpisodeTranscript;
    expect((first.llm[0]!.messages[0] as { content: string }).content).toBe("first");
    const bad = await SELF.fetch(`http://w/runs/run-att/episodes/${key}?attempt=zero`, { headers: authHeaders() });
    expect(bad.status).toBe(400);
  });

  it("past TRANSCRIPT_RETENTION_DAYS are not served (404 naming the setting) and are deleted", async () => {
    const days = transcriptSettings({ TRANSCRIPT_RETENTION_DAYS: "2" }).retentionMs / 86_400_000;
    expect(days).toBe(2);
    const longAgo = Date.now() - 3 * 86_400_000;
    await r2TranscriptSink({ ...env, TRANSCRIPT_RETENTION_DAYS: "2" }, () => longAgo)!.save(record("run-old", 1, "old"));
    const res = await SELF.fetch(`http://w/runs/run-old/episodes/${encodeURIComponent("gsm8k/0/3#1")}`, { headers: authHeaders() });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { message: string; issues: Array<{ message: string }> } };
    expect(body.error.message).toContain("expired");
    expect(body.error.issues[0]!.message).toContain("TRANSCRIPT_RETENTION_DAYS");
    expect(await env.TRANSCRIPTS!.list({ prefix: "transcripts/run-old/" })).toMatchObject({ objects: [] });
    // a fresh one with the same settings is served
    await r2TranscriptSink({ ...env, TRANSCRIPT_RETENTION_DAYS: "2" })!.save(record("run-new", 1, "new"));
    expect((await SELF.fetch(`http://w/runs/run-new/episodes/${encodeURIComponent("gsm8k/0/3#1")}`, { headers: authHeaders() })).status).toBe(200);
  });
});
