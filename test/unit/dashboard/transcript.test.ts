/** The episode transcript's recorder and size cap (runtime/transcript): what is kept, what is cut, what never is. */
import { describe, expect, it } from "vitest";
import { capTranscript, cutText, TranscriptRecorder, type EpisodeTranscript } from "../../../src/runtime/transcript.ts";

const base = {
  runId: "run-1", episodeKey: "src/0/1#0", attempt: 1, taskId: "t1", functionName: "f", episodeType: "train" as const, query: "q",
  claimedAtMs: 1_000, result: "ended", outcome: { kind: "end" as const, reward: 1 }, reward: 1, outputs: { default: { reward: 1 } },
};

function record(messages: string[], calls = 1): EpisodeTranscript {
  const rec = new TranscriptRecorder(() => 2_000);
  for (let i = 0; i < calls; i++) rec.llm.push({ swarm: "default", startedAtMs: 1, endedAtMs: 2, status: 200, messages: messages.map((content) => ({ role: "user", content })), reply: { role: "assistant", content: "ok" } });
  return rec.finish(base);
}

describe("episode transcripts", () => {
  it("records the LLM request's messages and the reply, but never a header, the URL or the api key", async () => {
    const rec = new TranscriptRecorder(() => 5);
    rec.redact("sk-ajet-secret-key-123");
    const fetch = rec.watchLlm("default", async () => new Response(JSON.stringify({ choices: [{ message: { role: "assistant", content: "42 (key sk-ajet-secret-key-123)" } }], usage: { total_tokens: 3 } }), { status: 200 }));
    const res = await fetch("http://h/v1/chat/completions?k=sk-ajet-secret-key-123", { method: "POST", headers: { authorization: "Bearer sk-ajet-secret-key-123" }, body: JSON.stringify({ messages: [{ role: "user", content: "6*7?" }] }) });
    expect(await res.text()).toContain("42"); // the caller still reads the whole body
    await new Promise((r) => setTimeout(r, 0));
    const t = rec.finish(base);
    expect(t.llm).toEqual([{ swarm: "default", route: "chat", startedAtMs: 5, endedAtMs: 5, status: 200, messages: [{ role: "user", content: "6*7?" }], reply: { role: "assistant", content: "42 (key [redacted])" }, usage: { total_tokens: 3 } }]);
    expect(JSON.stringify(t)).not.toContain("sk-ajet-secret-key-123");
  });

  it("records ctx.log lines and passes them on", () => {
    const seen: string[] = [];
    const rec = new TranscriptRecorder(() => 7);
    const log = rec.logger({ debug: () => {}, info: (m) => seen.push(m), warn: (m) => seen.push(m), error: (m) => seen.push(m) });
    log.info("tool called", { tool: "calc" });
    log.error("bad");
    expect(seen).toEqual(["tool called", "bad"]);
    expect(rec.finish(base).logs).toEqual([{ atMs: 7, level: "info", msg: "tool called", fields: { tool: "calc" } }, { atMs: 7, level: "error", msg: "bad" }]);
  });

  it("keeps a failure's error with its stack", () => {
    const rec = new TranscriptRecorder(() => 1);
    const t = rec.finish({ ...base, error: new TypeError("boom") });
    expect(t.error?.name).toBe("TypeError");
    expect(t.error?.message).toBe("boom");
    expect(t.error?.stack).toContain("TypeError: boom");
  });

  it("cuts a message longer than the text limit with a marker that says how much was cut", () => {
    const long = "a".repeat(10_000);
    const text = capTranscript(record([long, "short"]), { maxBytes: 1_000_000, maxTextChars: 1_000 });
    const t = JSON.parse(text) as EpisodeTranscript;
    const content = (t.llm[0]!.messages[0] as { content: string }).content;
    expect(content.length).toBeLessThanOrEqual(1_000);
    expect(content).toContain(`…[cut ${10_000 - 960} chars]…`);
    expect((t.llm[0]!.messages[1] as { content: string }).content).toBe("short");
    expect(t.truncated).toBe(true);
    expect(cutText("abc", 10)).toBe("abc");
  });

  it("fits the whole record under the byte cap: texts cut shorter, then middle LLM calls left out with a marker", () => {
    const t = record(["b".repeat(3_000)], 200);
    const text = capTranscript(t, { maxBytes: 20_000, maxTextChars: 8_000 });
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(20_000);
    const capped = JSON.parse(text) as EpisodeTranscript;
    expect(capped.truncated).toBe(true);
    expect(capped.llm.length).toBeLessThan(200);
    expect(capped.llm.some((c) => typeof c.reply === "string" && c.reply.includes("LLM calls left out to fit the size cap"))).toBe(true);
    expect(capped.reward).toBe(1);
    // a record under the cap is stored as it is
    const small = record(["hi"]);
    expect(JSON.parse(capTranscript(small))).toEqual({ ...small, truncated: false });
  });
});

describe("episode transcripts never keep a per-episode key", () => {
  it("replaces any sk-ajet- key a function logged, even one the recorder was not told about", () => {
    const rec = new TranscriptRecorder(() => 1);
    rec.logger({ debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }).info("calling with sk-ajet-abcDEF123", { header: "Bearer sk-ajet-xyz" });
    const text = JSON.stringify(rec.finish(base));
    expect(text).not.toMatch(/sk-ajet-(abc|xyz)/);
    expect(text).toContain("sk-ajet-<redacted>");
  });
});
