/**
 * @module test/unit/functions/academic-translation — the two-model function through createTestContext: call order
 * A, B, A on the right swarms, BC-44 on every request, one finite reward per swarm from a fake or scripted judge,
 * BC-21 unparseable verdicts abort, and the demo fallback (with the emulator answer key it ships).
 */
import { describe, expect, it } from "vitest";
import academicTranslation, {
  ACADEMIC_DEMO_ROWS,
  createAcademicTranslation,
  demoAnswerKey,
  demoTasks,
  DETECTOR_SYSTEM_PROMPT,
  detectorRequest,
  parseTermList,
  replyPayload,
  roughTranslationRequest,
  TRANSLATION_RUBRIC,
  TRANSLATOR_SYSTEM_PROMPT,
  translationTask,
} from "../../../functions/academic-translation.ts";
import { createTestContext, type ScriptedReply } from "../../../src/sdk/testing.ts";
import { Task } from "../../../src/protocol/index.ts";
import { AnswerKeyStore } from "../../../src/emulator/policy/answer-key.ts";
import { recogniseTask } from "../../../src/emulator/policy/replies.ts";
import { createFakeJudge, scriptedJudgeFetch } from "../../../src/rewards/judge-fake.ts";

const SWARMS = ["translator", "detector"];

/** One swarm's output as the function returns it. */
interface Out {
  reward: number;
  metadata: Record<string, unknown>;
  log_metrics: Record<string, number>;
}
/** The function's result, typed as one output per swarm. */
const bySwarm = (result: unknown) => result as { translator: Out; detector: Out };
const task = demoTasks[1]!;
const demo = ACADEMIC_DEMO_ROWS[1]!;

/** Replies per swarm: the translator answers `rough` then `final`, the detector `terms`. */
function replies(rough: ScriptedReply, terms: ScriptedReply, final: ScriptedReply) {
  const queue: Record<string, ScriptedReply[]> = { translator: [rough, final], detector: [terms] };
  return (_req: unknown, { swarm }: { swarm: string }) => queue[swarm]!.shift() ?? { status: 500 };
}

/** A fresh well-behaved script (scripts are consumed as they answer). */
const good = () =>
  replies(
    "<translation>本文研究了大堡礁的珊瑚白化。</translation>",
    "<terms>\n- Great Barrier Reef => 大堡礁\n- Sentinel-2 => 哨兵二号\n</terms>",
    `<translation>${demo.reference}</translation>`,
  );

describe("academic-translation", () => {
  it("BC-44 declares two swarms and calls A (translator), B (detector), A in order, a system message first on each", async () => {
    const { ctx, requests } = createTestContext({ swarms: SWARMS, reply: good() });
    const judge = createFakeJudge((req) => (req.label === "translation" ? 0.9 : 0.6));
    const out = await createAcademicTranslation({ judge: () => judge }).run(task, ctx);
    expect(academicTranslation.swarms).toEqual(SWARMS);
    expect(requests.map((r) => r.swarm)).toEqual(["translator", "detector", "translator"]);
    for (const r of requests) expect(r.body.messages[0]?.role).toBe("system");
    expect(requests[0]!.body.messages).toEqual([
      { role: "system", content: TRANSLATOR_SYSTEM_PROMPT },
      { role: "user", content: roughTranslationRequest(translationTask(task)) },
    ]);
    expect(requests[1]!.body.messages).toEqual([
      { role: "system", content: DETECTOR_SYSTEM_PROMPT },
      { role: "user", content: detectorRequest(translationTask(task), "本文研究了大堡礁的珊瑚白化。") },
    ]);
    // call 3 continues A's conversation with B's terms
    const third = requests[2]!.body.messages;
    const roughReply = { role: "assistant", content: "<translation>本文研究了大堡礁的珊瑚白化。</translation>" };
    expect(third.slice(0, 3)).toEqual([...requests[0]!.body.messages, roughReply]);
    const termLines = "Great Barrier Reef => 大堡礁\nSentinel-2 => 哨兵二号";
    expect(third[3]).toMatchObject({ role: "user", content: expect.stringContaining(termLines) });

    expect(Object.keys(out)).toEqual(["translator", "detector"]);
    const { translator, detector } = bySwarm(out);
    expect(translator).toMatchObject({
      reward: 0.9,
      metadata: { model: "A", score_source: "judge:fake-judge", final_translation: demo.reference },
    });
    const terms = [{ term: "Great Barrier Reef", rendering: "大堡礁" }, { term: "Sentinel-2", rendering: "哨兵二号" }];
    expect(detector).toMatchObject({ reward: 0.6, metadata: { model: "B", terms } });
    expect(Number.isFinite(translator.reward) && Number.isFinite(detector.reward)).toBe(true);
    expect(judge.requests.map((r) => r.label).sort()).toEqual(["terms", "translation"]);
    expect(judge.requests.find((r) => r.label === "translation")).toMatchObject({
      rubric: TRANSLATION_RUBRIC,
      input: expect.stringContaining(demo.reference),
    });
  });

  it("BC-21 an unparseable judge verdict aborts the episode (EpisodeAbortError judge_unparseable), never rewards 0", async () => {
    const { ctx } = createTestContext({ swarms: SWARMS, reply: good() });
    const fn = createAcademicTranslation({ judge: () => createFakeJudge(() => "There are 5 problems; overall 9/10") });
    await expect(fn.run(task, ctx)).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "judge_unparseable" });
  });

  it("uses the OpenAI-compatible judge from the run's secrets, retrying a truncated verdict", async () => {
    const endpoint = scriptedJudgeFetch({ content: null, finishReason: "length" }, 'Close. {"score": 0.8}', '{"score": 0.5}');
    const secrets = { JUDGE_BASE_URL: "http://judge.test/v1", JUDGE_API_KEY: "sk-j", JUDGE_MODEL: "grader" };
    const { ctx } = createTestContext({ swarms: SWARMS, reply: good(), secrets });
    const fn = createAcademicTranslation({ judgeOptions: { fetch: endpoint.fetch, sleep: async () => {} } });
    const out = bySwarm(await fn.run(task, ctx));
    expect(endpoint.requests).toHaveLength(3);
    const rewards = [out.translator.reward, out.detector.reward].sort();
    expect(rewards).toEqual([0.5, 0.8]);
    expect(out.translator.metadata.score_source).toBe("judge:grader");
    expect(out.translator.log_metrics.judge_attempts! + out.detector.log_metrics.judge_attempts!).toBe(3);
  });

  it("without judge secrets scores with the demo fallback: reference overlap for A, term list for B", async () => {
    const referenceTerms = demo.properNouns.map((p) => `${p.term} => ${p.rendering}`).join("\n");
    const exact = replies(
      `<think>…</think>\n<answer>${demo.reference}</answer>`,
      `<answer>${referenceTerms}</answer>`,
      `<think>ok</think>\n<answer>${demo.reference}</answer>`,
    );
    const good = createTestContext({ swarms: SWARMS, reply: exact });
    const out = bySwarm(await academicTranslation.run(task, good.ctx));
    expect(out.translator).toMatchObject({ reward: 1, metadata: { score_source: "fallback:char-bigram-f1" } });
    expect(out.detector).toMatchObject({ reward: 1, metadata: { score_source: "fallback:term-list" } });
    expect(good.logs).toContainEqual({ level: "info", msg: expect.stringContaining("demo fallback") });

    const wrong = createTestContext({ swarms: SWARMS, reply: replies("<answer>57</answer>", "<answer>12</answer>", "My answer is 57") });
    const bad = bySwarm(await academicTranslation.run(task, wrong.ctx));
    expect([bad.translator.reward, bad.detector.reward]).toEqual([0, 0]);
  });

  it("the fallback without references: Han share for A, terms found in the source for B", async () => {
    const bare = Task.parse({ task_id: "t:0", metadata: { abstract: "We study the Great Barrier Reef." } });
    const script = replies("大堡礁", "Great Barrier Reef => 大堡礁\nAtlantis => 亚特兰蒂斯", "我们研究大堡礁 (GBR)。");
    const { ctx } = createTestContext({ swarms: SWARMS, reply: script });
    const out = bySwarm(await academicTranslation.run(bare, ctx));
    expect(out.translator).toMatchObject({ reward: 7 / 10, metadata: { score_source: "fallback:han-share" } });
    expect(out.detector).toMatchObject({ reward: 0.5, metadata: { score_source: "fallback:terms-in-source" } });
  });

  it("BC-43 an engine abort on the detector's call aborts the episode; `length` goes on and is scored", async () => {
    const aborted = createTestContext({ swarms: SWARMS, reply: replies("译文", { content: "Great", finishReason: "abort" }, "译文") });
    await expect(academicTranslation.run(task, aborted.ctx)).rejects.toMatchObject({ reason: "llm_aborted" });
    expect(aborted.callCount()).toBe(2);
    const cut = createTestContext({ swarms: SWARMS, reply: replies({ content: "本文研究", finishReason: "length" }, "none", "本文") });
    const out = bySwarm(await academicTranslation.run(task, cut.ctx));
    expect(out.translator.metadata.finish_reasons).toEqual(["length", "stop", "stop"]);
    expect(out.detector.metadata.terms).toEqual([]);
  });

  it("refuses a task without an abstract before any call, and reads main_query and term maps tolerantly", async () => {
    const { ctx, requests } = createTestContext({ swarms: SWARMS, reply: good() });
    await expect(academicTranslation.run(Task.parse({ task_id: "x" }), ctx)).rejects.toMatchObject({ reason: "invalid_task" });
    expect(requests).toHaveLength(0);
    const t = translationTask(Task.parse({ main_query: " Text. ", metadata: { proper_nouns: { Raft: "Raft" }, target_language: "French" } }));
    expect(t).toEqual({ abstract: "Text.", properNouns: [{ term: "Raft", rendering: "Raft" }], sourceLanguage: "English", targetLanguage: "French" });
  });

  it("parses replies and term lists tolerantly", () => {
    expect(replyPayload("<think>x</think> Here: <translation> 你好 </translation>")).toBe("你好");
    expect(replyPayload("<answer>a</answer> then <translation>b</translation>")).toBe("b");
    expect(replyPayload([{ type: "text", text: "plain" }])).toBe("plain");
    expect(parseTermList('1. "Raft" -> Raft\n* etcd：etcd\n\nNone\nByzantine Generals Problem → 拜占庭将军问题\nQuorum Relay')).toEqual([
      { term: "Raft", rendering: "Raft" },
      { term: "etcd", rendering: "etcd" },
      { term: "Byzantine Generals Problem", rendering: "拜占庭将军问题" },
      { term: "Quorum Relay" },
    ]);
  });

  it("ships an emulator answer key that maps each call's prompt to the right reference", () => {
    const store = new AnswerKeyStore();
    store.add(demoAnswerKey());
    for (const [i, row] of ACADEMIC_DEMO_ROWS.entries()) {
      const t = translationTask(demoTasks[i]!);
      const first = [{ role: "system", content: TRANSLATOR_SYSTEM_PROMPT }, { role: "user", content: roughTranslationRequest(t) }];
      expect(recogniseTask(first, store)).toMatchObject({ kind: "key", entry: { answer: row.reference } });
      const second = [{ role: "system", content: DETECTOR_SYSTEM_PROMPT }, { role: "user", content: detectorRequest(t, "粗译") }];
      expect(recogniseTask(second, store)).toMatchObject({ kind: "key", entry: { answer: expect.stringContaining(`${row.properNouns[0]!.term} => `) } });
      const third = [...first, { role: "assistant", content: "粗译" }, { role: "user", content: "A terminology reviewer suggests …" }];
      expect(recogniseTask(third, store)).toMatchObject({ kind: "key", entry: { answer: row.reference } });
    }
    expect(parseTermList(demoAnswerKey()[1]!.answer)).toEqual(ACADEMIC_DEMO_ROWS[0]!.properNouns);
  });
});
