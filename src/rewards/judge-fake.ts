/**
 * @module rewards/judge-fake — deterministic judges for tests and demos, no network (issue 4 §3): a
 * {@link createFakeJudge} that answers from a function, and a {@link scriptedJudgeFetch} that plays an
 * OpenAI-compatible judge endpoint for `createOpenAIJudge` (scripted replies, HTTP errors, connection failures).
 * Platform-free.
 */
import { EpisodeAbortError } from "../port/index.ts";
import { type Judge, type JudgeFetch, JudgeReason, type JudgeRequest, type JudgeVerdict } from "./judge.ts";
import { parseJudgeVerdict } from "./judge-verdict.ts";

/**
 * What a fake judge answers: a score, a raw reply text (read by `parseJudgeVerdict`, so BC-21 cases can be played
 * through a fake), a reply with its finish reason, or an error to throw.
 */
export type FakeJudgeAnswer = number | string | { content: string | null; finishReason?: string } | Error;

/** A fake judge: a {@link Judge} that also records what it was asked. */
export interface FakeJudge extends Judge {
  /** every request, in order */
  readonly requests: JudgeRequest[];
}

/**
 * A judge that answers with `answer(request, index)` (index counts requests from 0), or always with one score.
 * A number outside [0, 1] or an unparseable reply throws `EpisodeAbortError("judge_unparseable")` at once (a
 * fake has no retries); an `Error` answer is thrown as is. Put a clock advance in `answer` to play a slow judge.
 * @example createFakeJudge((req) => (req.label === "translation" ? 0.8 : 0.5))
 */
export function createFakeJudge(
  answer: number | ((request: JudgeRequest, index: number) => FakeJudgeAnswer | Promise<FakeJudgeAnswer>),
  name = "fake-judge",
): FakeJudge {
  const requests: JudgeRequest[] = [];
  return {
    name,
    requests,
    async grade(request): Promise<JudgeVerdict> {
      const index = requests.push(request) - 1;
      const got = typeof answer === "number" ? answer : await answer(request, index);
      if (got instanceof Error) throw got;
      const reply =
        typeof got === "number" ? { content: JSON.stringify({ score: got }) } : typeof got === "string" ? { content: got } : got;
      const verdict = parseJudgeVerdict(reply.content, reply.finishReason);
      if (!verdict.ok) throw new EpisodeAbortError(JudgeReason.unparseable, `${name}: ${verdict.problem}`);
      return { score: verdict.score, source: "fake", attempts: 1, text: reply.content ?? "", judge: name };
    },
  };
}

/** One scripted answer of the judge endpoint: reply text, a reply with finish reason, an HTTP error, or a throw. */
export type ScriptedJudgeReply =
  | string
  | { content: string | null; finishReason?: string }
  | { status: number; body?: unknown }
  | { throws: Error };

/** The recorded requests of a {@link scriptedJudgeFetch}. */
export interface ScriptedJudgeEndpoint {
  fetch: JudgeFetch;
  /** parsed JSON bodies, in order */
  requests: Array<{ url: string; body: Record<string, unknown> }>;
}

/**
 * A fetch that answers `/chat/completions` from `replies` in order (HTTP 500 once they run out) — a fake
 * OpenAI-compatible judge endpoint for `createOpenAIJudge({ fetch })`. `{ throws: new Error("… timed out") }`
 * makes the SDK raise its timeout error at once (no waiting); `{ throws: new TypeError("fetch failed") }` a
 * connection error.
 */
export function scriptedJudgeFetch(...replies: ScriptedJudgeReply[]): ScriptedJudgeEndpoint {
  const requests: ScriptedJudgeEndpoint["requests"] = [];
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  const fetch: JudgeFetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const text = typeof init?.body === "string" ? init.body : "";
    requests.push({ url, body: JSON.parse(text || "{}") as Record<string, unknown> });
    const reply = replies[requests.length - 1] ?? { status: 500, body: { error: { message: "scriptedJudgeFetch: no reply left" } } };
    if (typeof reply !== "string" && "throws" in reply) throw reply.throws;
    if (typeof reply !== "string" && "status" in reply) return json(reply.status, reply.body ?? {});
    const message = typeof reply === "string" ? { content: reply } : reply;
    return json(200, {
      id: `chatcmpl-judge-${requests.length}`,
      object: "chat.completion",
      created: 0,
      model: "judge",
      choices: [
        { index: 0, message: { role: "assistant", content: message.content }, finish_reason: message.finishReason ?? "stop" },
      ],
    });
  };
  return { fetch, requests };
}
