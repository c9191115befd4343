/** @module test/unit/rewards/judge — verdict parsing (BC-21), the OpenAI-compatible judge's retry loop, secrets, fakes. */
import { APIUserAbortError } from "openai";
import { describe, expect, it } from "vitest";
import { EpisodeAbortError } from "../../../src/sdk/contract.ts";
import {
  createOpenAIJudge,
  judgeFromSecrets,
  JUDGE_SCORE_INSTRUCTION,
  parseJudgeVerdict,
  stripReasoning,
  type OpenAIJudgeOptions,
} from "../../../src/rewards/judge.ts";
import { createFakeJudge, type ScriptedJudgeReply, scriptedJudgeFetch } from "../../../src/rewards/judge-fake.ts";
import { SubrequestBudgetExceededError } from "../../../src/runtime/limits.ts";
import { decideOutcome } from "../../../src/runtime/outcome.ts";

const request = { label: "translation", rubric: `Grade it.\n${JUDGE_SCORE_INSTRUCTION}`, input: "candidate: 你好" };

/** A judge on a scripted endpoint; sleeps are recorded, never waited. */
function judgeOn(replies: ScriptedJudgeReply[], options: Partial<OpenAIJudgeOptions> = {}) {
  const endpoint = scriptedJudgeFetch(...replies);
  const sleeps: number[] = [];
  const judge = createOpenAIJudge({
    baseUrl: "http://judge.test/v1",
    apiKey: "sk-judge",
    model: "judge-model",
    fetch: endpoint.fetch,
    sleep: async (ms) => void sleeps.push(ms),
    ...options,
  });
  return { judge, endpoint, sleeps };
}

describe("parseJudgeVerdict (BC-21)", () => {
  it("BC-21 (a) the final verdict tag wins over the rule the judge repeated", () => {
    const tags = { "[[CORRECT]]": 1, "[[INCORRECT]]": 0 };
    const reply =
      "The rule says: answer [[CORRECT]] when the result matches, [[INCORRECT]] otherwise. The candidate gives 12, " +
      "the gold is 13, so my verdict is [[INCORRECT]]";
    expect(parseJudgeVerdict(reply, "stop", { verdictTags: tags })).toEqual({ ok: true, score: 0, source: "tag" });
    // overlapping tags: INCORRECT contains CORRECT; the longer one ending at the same place wins
    expect(parseJudgeVerdict("CORRECT or INCORRECT? INCORRECT", "stop", { verdictTags: { CORRECT: 1, INCORRECT: 0 } })).toMatchObject({ score: 0 });
    const json = 'Use {"score": 1} for a perfect answer and {"score": 0} for a wrong one. Verdict: {"score": 0}';
    expect(parseJudgeVerdict(json, "stop")).toEqual({ ok: true, score: 0, source: "json" });
    // a JSON verdict after a tag mention wins, and the other way round
    expect(parseJudgeVerdict('[[CORRECT]] means 1. {"score": 0.25}', "stop", { verdictTags: tags })).toMatchObject({ score: 0.25, source: "json" });
    expect(parseJudgeVerdict('{"score": 0.25} was my draft. [[CORRECT]]', "stop", { verdictTags: tags })).toMatchObject({ score: 1, source: "tag" });
  });

  it("BC-21 (b) an empty, null or truncated reply is unparseable, never 0", () => {
    for (const [content, finish] of [[null, "length"], ["", "stop"], ["   ", null], ['{"score": 0.9}', "length"], ['{"score":', "length"]] as const) {
      const v = parseJudgeVerdict(content, finish);
      expect(v.ok).toBe(false);
    }
    expect(parseJudgeVerdict(null, "length")).toMatchObject({ problem: expect.stringContaining('finish_reason "length"') });
  });

  it("BC-21 (c) prose numbers are never a score; the JSON score must be a number in [0, 1]", () => {
    expect(parseJudgeVerdict("There are 5 problems; overall 9/10", "stop")).toMatchObject({ ok: false, problem: expect.stringContaining('{"score": x}') });
    for (const bad of ['{"score": 5}', '{"score": -0.1}', '{"score": "0.9"}', '{"score": null}', "{'score': 0.9}"]) {
      expect(parseJudgeVerdict(`Overall fine. ${bad}`, "stop").ok).toBe(false);
    }
    expect(parseJudgeVerdict('Reasoning… {"reason": "good", "score": 0.75}\n', "stop")).toEqual({ ok: true, score: 0.75, source: "json" });
    expect(parseJudgeVerdict('```json\n{"score": 1}\n```', "stop")).toMatchObject({ score: 1 });
  });

  it("ignores <think> blocks: a score only inside reasoning is no verdict", () => {
    expect(stripReasoning("a<think>x</think>b<think>y")).toBe("ab");
    expect(parseJudgeVerdict('<think>maybe {"score": 1}</think> {"score": 0.2}', "stop")).toMatchObject({ score: 0.2 });
    expect(parseJudgeVerdict('<think>maybe {"score": 1}', "stop").ok).toBe(false);
  });
});

describe("createOpenAIJudge", () => {
  it("sends the rubric as the system message first, then the input, with temperature 0", async () => {
    const { judge, endpoint } = judgeOn(['Faithful and fluent. {"score": 0.8}']);
    const v = await judge.grade(request);
    expect(v).toEqual({ score: 0.8, source: "json", attempts: 1, text: 'Faithful and fluent. {"score": 0.8}', judge: "judge-model" });
    expect(endpoint.requests).toHaveLength(1);
    expect(endpoint.requests[0]!.url).toBe("http://judge.test/v1/chat/completions");
    expect(endpoint.requests[0]!.body).toMatchObject({
      model: "judge-model",
      temperature: 0,
      max_tokens: 1024,
      messages: [
        { role: "system", content: request.rubric },
        { role: "user", content: request.input },
      ],
    });
  });

  it("BC-21 (b) retries a truncated reply and scores the retry", async () => {
    const { judge, endpoint, sleeps } = judgeOn([{ content: null, finishReason: "length" }, '{"score": 0.6}']);
    await expect(judge.grade(request)).resolves.toMatchObject({ score: 0.6, attempts: 2 });
    expect(endpoint.requests).toHaveLength(2);
    expect(sleeps).toEqual([1000]);
  });

  it("BC-21 throws judge_unparseable after the retry budget, with the last problem", async () => {
    const { judge, endpoint, sleeps } = judgeOn(["There are 5 problems; overall 9/10", { content: "", finishReason: "length" }, '{"score": 7}']);
    const err = await judge.grade(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EpisodeAbortError);
    expect(err).toMatchObject({ reason: "judge_unparseable", message: expect.stringContaining("3 attempt(s)") });
    expect((err as Error).message).toContain("7");
    expect(endpoint.requests).toHaveLength(3);
    expect(sleeps).toEqual([1000, 2000]);
  });

  it("retries timeouts, connection errors, 429 and 5xx one request per attempt (SDK retries off)", async () => {
    const { judge, endpoint } = judgeOn([
      { throws: new Error("request timed out") },
      { throws: new TypeError("fetch failed") },
      { status: 503, body: { error: { message: "busy" } } },
      { status: 429, body: { error: { message: "slow down" } } },
      '{"score": 1}',
    ], { maxAttempts: 5 });
    await expect(judge.grade(request)).resolves.toMatchObject({ score: 1, attempts: 5 });
    expect(endpoint.requests).toHaveLength(5);
  });

  it("gives up with judge_unavailable: at once on a 401, after the budget on 5xx", async () => {
    const auth = judgeOn([{ status: 401, body: { error: { message: "bad key" } } }, '{"score": 1}']);
    await expect(auth.judge.grade(request)).rejects.toMatchObject({ name: "EpisodeAbortError", reason: "judge_unavailable" });
    expect(auth.endpoint.requests).toHaveLength(1);
    const down = judgeOn([{ status: 500 }, { status: 502 }], { maxAttempts: 2, retryDelayMs: 10 });
    await expect(down.judge.grade(request)).rejects.toMatchObject({ reason: "judge_unavailable" });
    expect(down.endpoint.requests).toHaveLength(2);
    expect(down.sleeps).toEqual([10]);
  });

  it("BC-49 passes a non-retryable platform error (subrequest budget) through unchanged, after one request", async () => {
    const budget = new SubrequestBudgetExceededError(50, 50, "judge");
    const { judge, endpoint } = judgeOn([{ throws: budget }, '{"score": 1}']);
    const err = await judge.grade(request).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(EpisodeAbortError);
    expect((err as Error).cause).toBe(budget); // inside the SDK's APIConnectionError
    const base = { threw: true, swarms: ["default"], activity: {}, episodeType: "train" as const, lifetimeExceeded: false };
    const decision = decideOutcome({ ...base, error: err, discardEpisodeTimeoutSeconds: 240, nowMs: 0 });
    expect(decision.outcome).toEqual({ kind: "abort", cause: "subrequest_budget" });
    expect(endpoint.requests).toHaveLength(1);
  });

  it("lets the caller's abort through as an abort, not a judge failure", async () => {
    const { judge, endpoint } = judgeOn(['{"score": 1}']);
    const controller = new AbortController();
    controller.abort(new Error("episode stopped"));
    await expect(judge.grade(request, { signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    expect(endpoint.requests).toHaveLength(0);
  });
});

describe("judgeFromSecrets", () => {
  it("returns no judge without secrets, and refuses a partial configuration by name", () => {
    expect(judgeFromSecrets({})).toBeUndefined();
    expect(judgeFromSecrets({ OTHER: "x", JUDGE_MODEL: "  " })).toBeUndefined();
    expect(() => judgeFromSecrets({ JUDGE_BASE_URL: "http://judge.test/v1" })).toThrow(/JUDGE_API_KEY, JUDGE_MODEL missing/);
    let thrown: unknown;
    try {
      judgeFromSecrets({ JUDGE_API_KEY: "k" });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ name: "EpisodeAbortError", reason: "judge_misconfigured" });
  });

  it("builds a judge on the given endpoint, model and fetch", async () => {
    const endpoint = scriptedJudgeFetch('{"score": 0.5}');
    const secrets = { JUDGE_BASE_URL: "http://judge.test/v1", JUDGE_API_KEY: "sk-judge", JUDGE_MODEL: "grader-1" };
    const judge = judgeFromSecrets(secrets, { fetch: endpoint.fetch })!;
    expect(judge.name).toBe("grader-1");
    await expect(judge.grade(request)).resolves.toMatchObject({ score: 0.5, judge: "grader-1" });
    expect(endpoint.requests[0]).toMatchObject({ url: "http://judge.test/v1/chat/completions", body: { model: "grader-1" } });
  });
});

describe("createFakeJudge", () => {
  it("answers from a score or a function, records requests, and parses raw replies like the real judge", async () => {
    const constant = createFakeJudge(0.4);
    await expect(constant.grade(request)).resolves.toMatchObject({ score: 0.4, source: "fake", attempts: 1 });
    const byLabel = createFakeJudge((req, i) => (req.label === "translation" ? 0.9 : `draft {"score": 1} final {"score": ${i / 10}}`));
    await expect(byLabel.grade(request)).resolves.toMatchObject({ score: 0.9 });
    await expect(byLabel.grade({ ...request, label: "terms" })).resolves.toMatchObject({ score: 0.1 });
    expect(byLabel.requests.map((r) => r.label)).toEqual(["translation", "terms"]);
  });

  it("BC-21 an unparseable fake reply throws judge_unparseable; an Error answer is thrown as is", async () => {
    await expect(createFakeJudge(() => "overall 9/10").grade(request)).rejects.toMatchObject({ reason: "judge_unparseable" });
    await expect(createFakeJudge(() => ({ content: null, finishReason: "length" })).grade(request)).rejects.toMatchObject({ reason: "judge_unparseable" });
    await expect(createFakeJudge(1.5).grade(request)).rejects.toMatchObject({ reason: "judge_unparseable" });
    const boom = new Error("boom");
    await expect(createFakeJudge(() => boom).grade(request)).rejects.toBe(boom);
  });
});
