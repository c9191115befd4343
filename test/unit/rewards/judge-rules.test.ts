/**
 * @module test/unit/rewards/judge-rules — the finer rules of the judged rewards: which reply is a verdict (BC-21),
 * which endpoint failures are retried, what a failure says, how the run's secrets are read, the idle budget's edge
 * (BC-23), and the demo fallback scores on blank and one-character inputs.
 */
import { describe, expect, it } from "vitest";
import { EpisodeAbortError } from "../../../src/sdk/contract.ts";
import { createOpenAIJudge, judgeFromSecrets, type JudgeFetch, parseJudgeVerdict, type OpenAIJudgeOptions } from "../../../src/rewards/judge.ts";
import { checkIdleBudget, DEFAULT_IDLE_MARGIN_SECONDS, minDiscardTimeoutSeconds } from "../../../src/rewards/judge-budget.ts";
import { charBigramF1, termListScore, termsFoundInSource } from "../../../src/rewards/judge-fallback.ts";
import { type ScriptedJudgeReply, scriptedJudgeFetch } from "../../../src/rewards/judge-fake.ts";

const request = { label: "translation", rubric: 'Grade it. End with {"score": x}.', input: "candidate: 你好" };

function judgeOn(replies: ScriptedJudgeReply[], options: Partial<OpenAIJudgeOptions> = {}) {
  const endpoint = scriptedJudgeFetch(...replies);
  const judge = createOpenAIJudge({
    baseUrl: "http://judge.test/v1",
    apiKey: "sk-judge",
    model: "judge-model",
    fetch: endpoint.fetch,
    sleep: async () => {},
    ...options,
  });
  return { judge, endpoint };
}

describe("parseJudgeVerdict: which reply is a verdict (BC-21)", () => {
  it("a later JSON object without a score does not hide the verdict before it", () => {
    expect(parseJudgeVerdict('Verdict: {"score": 0.9} {"note": "fluent"}', "stop")).toEqual({ ok: true, score: 0.9, source: "json" });
    expect(parseJudgeVerdict('{"score": 0.4}\n{"confidence": "high"}', "stop")).toMatchObject({ score: 0.4 });
  });

  it("between two tags ending at the same place the longer wins, whatever order the rubric lists them in", () => {
    const reply = "The candidate is INCORRECT";
    expect(parseJudgeVerdict(reply, "stop", { verdictTags: { INCORRECT: 0, CORRECT: 1 } })).toEqual({ ok: true, score: 0, source: "tag" });
    expect(parseJudgeVerdict(reply, "stop", { verdictTags: { CORRECT: 1, INCORRECT: 0 } })).toEqual({ ok: true, score: 0, source: "tag" });
  });

  it("the tag that ends last wins even when an earlier tag is longer", () => {
    const reply = "I first thought INCORRECT, but on checking the units it is CORRECT";
    expect(parseJudgeVerdict(reply, "stop", { verdictTags: { CORRECT: 1, INCORRECT: 0 } })).toMatchObject({ score: 1 });
    expect(parseJudgeVerdict(reply, "stop", { verdictTags: { INCORRECT: 0, CORRECT: 1 } })).toMatchObject({ score: 1 });
  });

  it("an empty tag in the rubric's table is never a verdict", () => {
    expect(parseJudgeVerdict('{"score": 0.2}', "stop", { verdictTags: { "": 1 } })).toEqual({ ok: true, score: 0.2, source: "json" });
    expect(parseJudgeVerdict("no verdict here", "stop", { verdictTags: { "": 1 } }).ok).toBe(false);
  });

  it("a null, empty or blank reply says the reply is empty (not that it lacks a score)", () => {
    for (const content of [null, undefined, "", "  \n\t "]) {
      expect(parseJudgeVerdict(content, "stop")).toEqual({ ok: false, problem: "the judge reply is empty" });
    }
    expect(parseJudgeVerdict("<think>only reasoning</think>  ", "stop")).toEqual({ ok: false, problem: "the judge reply is empty" });
  });
});

describe("createOpenAIJudge: which failures are retried and what a failure says", () => {
  for (const status of [408, 409]) {
    it(`retries an HTTP ${status} (as openai-node does) and scores the next reply`, async () => {
      const { judge, endpoint } = judgeOn([{ status, body: { error: { message: "try again" } } }, '{"score": 0.6}']);
      await expect(judge.grade(request)).resolves.toMatchObject({ score: 0.6, attempts: 2 });
      expect(endpoint.requests).toHaveLength(2);
    });
  }

  it("a 4xx that is not retried names the judge, its label and the endpoint's error, and keeps it as the cause", async () => {
    const { judge } = judgeOn([{ status: 403, body: { error: { message: "model not allowed" } } }]);
    const err = await judge.grade(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EpisodeAbortError);
    expect(err).toMatchObject({ reason: "judge_unavailable" });
    expect((err as Error).message).toMatch(/^judge judge-model \(translation\) failed: \w+: 403 model not allowed/);
    expect((err as Error & { cause?: { status?: number } }).cause?.status).toBe(403);
  });

  it("a request without a label is named by the model alone", async () => {
    const { judge } = judgeOn(["no verdict"], { maxAttempts: 1 });
    await expect(judge.grade({ rubric: request.rubric, input: request.input })).rejects.toThrow(
      /^judge judge-model: no verdict after 1 attempt\(s\); last: the judge reply has no \{"score": x\} object$/,
    );
  });

  it("a 200 reply without choices, message or content is an unparseable reply (retried), not an endpoint failure", async () => {
    for (const body of [{}, { choices: [] }, { choices: [{ index: 0, finish_reason: "stop" }] }]) {
      const { judge, endpoint } = judgeOn([{ status: 200, body }, { status: 200, body }], { maxAttempts: 2 });
      await expect(judge.grade(request)).rejects.toMatchObject({ reason: "judge_unparseable" });
      expect(endpoint.requests).toHaveLength(2);
    }
  });

  it("a scripted endpoint that has run out of replies answers 500 (retried, then unavailable)", async () => {
    const { judge, endpoint } = judgeOn([], { maxAttempts: 2 });
    await expect(judge.grade(request)).rejects.toMatchObject({ reason: "judge_unavailable" });
    expect(endpoint.requests).toHaveLength(2);
  });

  it("a connection error whose cause chain is a cycle is still retried (the chain is walked a bounded number of steps)", async () => {
    const looped = new TypeError("fetch failed") as TypeError & { cause?: unknown };
    looped.cause = looped;
    const { judge, endpoint } = judgeOn([{ throws: looped }, '{"score": 1}']);
    await expect(judge.grade(request)).resolves.toMatchObject({ score: 1, attempts: 2 });
    expect(endpoint.requests).toHaveLength(2);
  });
});

describe("judgeFromSecrets: how the run's secrets are read", () => {
  it("names exactly the secrets that are missing, and all three for the fix", () => {
    expect(() => judgeFromSecrets({ JUDGE_BASE_URL: "http://judge.test/v1", JUDGE_API_KEY: "k" })).toThrow(
      new EpisodeAbortError(
        "judge_misconfigured",
        "judge secrets incomplete: JUDGE_MODEL missing (set all of JUDGE_BASE_URL, JUDGE_API_KEY, JUDGE_MODEL in the run's secrets, or none for the fallback)",
      ).message,
    );
    let message = "";
    try {
      judgeFromSecrets({ JUDGE_MODEL: "m" });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^judge secrets incomplete: JUDGE_BASE_URL, JUDGE_API_KEY missing \(/);
  });

  it("trims the secrets: the endpoint, the bearer key and the model are used without surrounding whitespace", async () => {
    const seen: Array<{ url: string; auth: string | null; model: unknown }> = [];
    const fetch: JudgeFetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      const body = JSON.parse(String(init?.body ?? "{}")) as { model?: unknown };
      seen.push({ url, auth: new Headers(init?.headers).get("authorization"), model: body.model });
      const reply = { id: "x", object: "chat.completion", created: 0, model: "m", choices: [{ index: 0, message: { role: "assistant", content: '{"score": 1}' }, finish_reason: "stop" }] };
      return new Response(JSON.stringify(reply), { status: 200, headers: { "content-type": "application/json" } });
    };
    const judge = judgeFromSecrets({ JUDGE_BASE_URL: " http://judge.test/v1 \n", JUDGE_API_KEY: "\tsk-judge ", JUDGE_MODEL: " grader-1 " }, { fetch })!;
    expect(judge.name).toBe("grader-1");
    await expect(judge.grade(request)).resolves.toMatchObject({ score: 1, judge: "grader-1" });
    expect(seen).toEqual([{ url: "http://judge.test/v1/chat/completions", auth: "Bearer sk-judge", model: "grader-1" }]);
  });
});

describe("checkIdleBudget: the edge of the budget (BC-23)", () => {
  it("a discard timeout exactly at the needed budget fits; one second less does not", () => {
    const input = { maxJudgeLatencyMs: 2500, judgeCalls: 2, marginSeconds: 5 };
    const needed = minDiscardTimeoutSeconds(input);
    expect(needed).toBe(5 + 10 + 5);
    expect(checkIdleBudget(needed, input)).toBeNull();
    expect(checkIdleBudget(needed - 1, input)).not.toBeNull();
  });

  it("the refusal states the timeout, the budget, each term of it and the fix", () => {
    expect(checkIdleBudget(19, { maxJudgeLatencyMs: 2500, judgeCalls: 2, marginSeconds: 5 })).toBe(
      "discardEpisodeTimeoutSeconds 19 is below the judge's idle budget 20 s (2 × 2500 ms worst-case judge latency + 10 s janitor scan + 5 s margin): raise the timeout, or lower the judge's timeoutMs or maxAttempts",
    );
  });

  it("without judgeCalls or a margin the refusal states the defaults it used (1 call, the default margin)", () => {
    const message = checkIdleBudget(1, { maxJudgeLatencyMs: 4000 });
    const needed = 4 + 10 + DEFAULT_IDLE_MARGIN_SECONDS;
    expect(message).toBe(
      `discardEpisodeTimeoutSeconds 1 is below the judge's idle budget ${needed} s (1 × 4000 ms worst-case judge latency + 10 s janitor scan + ${DEFAULT_IDLE_MARGIN_SECONDS} s margin): raise the timeout, or lower the judge's timeoutMs or maxAttempts`,
    );
  });
});

describe("demo fallback scores: blank and one-character inputs", () => {
  it("a one-character text is compared by characters against a longer one, from either side", () => {
    // unigrams {a} vs {a, b}: precision 1, recall 1/2 → F1 2/3
    expect(charBigramF1("a", "ab")).toBeCloseTo(2 / 3);
    expect(charBigramF1("ab", "a")).toBeCloseTo(2 / 3);
  });

  it("two texts of two or more characters are compared by bigrams, not characters", () => {
    // bigrams {ab} vs {ab, bc}: precision 1, recall 1/2 → 2/3 (by characters it would be 4/5)
    expect(charBigramF1("ab", "abc")).toBeCloseTo(2 / 3);
    expect(charBigramF1("abc", "ab")).toBeCloseTo(2 / 3);
  });

  it("blank terms count on neither side of the term F1", () => {
    const reference = [{ term: "reef", rendering: "礁" }, { term: "coral" }];
    const detected = [{ term: "reef", rendering: "礁" }, { term: "coral" }];
    expect(termListScore(detected, reference)).toBeCloseTo(0.5 * 1 + 0.5 * 0.5);
    expect(termListScore([...detected, { term: "  " }], reference)).toBeCloseTo(0.75);
    expect(termListScore(detected, [...reference, { term: "\t", rendering: "x" }])).toBeCloseTo(0.75);
  });

  it("an empty reference rendering is nothing to match (no credit for an empty detected rendering)", () => {
    expect(termListScore([{ term: "reef", rendering: "" }], [{ term: "reef", rendering: "" }])).toBeCloseTo(0.5);
    expect(termListScore([{ term: "reef" }], [{ term: "reef", rendering: " " }])).toBeCloseTo(0.5);
  });

  it("termsFoundInSource ignores blank detected terms (a blank term is not 'found')", () => {
    expect(termsFoundInSource([{ term: " " }], "any source text")).toBe(0);
    expect(termsFoundInSource([{ term: " " }, { term: "reef" }], "the reef")).toBe(1);
    expect(termsFoundInSource([{ term: "" }, { term: "invented" }], "the reef")).toBe(0);
  });
});
