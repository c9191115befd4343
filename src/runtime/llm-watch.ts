/**
 * @module runtime/llm-watch — the one wrapper every LLM call of an episode goes through, whatever its route (chat
 * completions, Responses, Anthropic Messages): it reads the request body once and a clone of the answer once
 * (runtime/llm-answer), and hands both to the episode's meter (runtime/episode-meter: the learning signals and
 * cost) and, when transcripts are on, to the transcript's record of the call. The rollout context puts it on each
 * swarm's fetch (runtime/rollout-context), so a client of any route is measured the same way.
 */
import type { EpisodeMeter } from "./episode-meter.ts";
import type { FetchLike } from "./limits.ts";
import { parseLlmAnswer, type LlmAnswer } from "./llm-answer.ts";
import { llmRouteOf, urlOf, type LlmRoute } from "../sdk/llm-routes.ts";

/** The transcript's side of one call: what the record fills in as the call goes. */
export interface LlmCallRecord {
  /** the answer's status arrived */
  status(status: number): void;
  /** the answer's body was read to its end (epoch ms); `text` is that body as received (JSON or an event stream) */
  answered(answer: LlmAnswer, endedAtMs: number, text: string): void;
  /** the request failed, or its body could not be read */
  failed(error: string): void;
}

/** Who watches an episode's LLM calls. */
export interface LlmWatchers {
  /** epoch ms clock */
  now(): number;
  meter?: EpisodeMeter;
  /**
   * opens the transcript's record of a call (`body`: the parsed request JSON, undefined when it was not JSON;
   * `route`: the LLM route its URL names, chat when it names none)
   */
  record?(swarm: string, body: unknown, route: LlmRoute): LlmCallRecord | undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const describe = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));

/**
 * Wraps one swarm's LLM fetch so each call is measured and recorded. The caller's response is returned untouched;
 * a clone is read alongside it (a failure to read the clone only loses the measurement).
 */
export function watchLlm(swarm: string, inner: FetchLike, w: LlmWatchers): FetchLike {
  if (!w.meter && !w.record) return inner;
  return async (input, init) => {
    const bodyText = typeof init?.body === "string" ? init.body : "";
    const startedAtMs = w.now();
    w.meter?.sent(bodyText.length);
    const call = w.record?.(swarm, bodyText ? parseJson(bodyText) : undefined, llmRouteOf(urlOf(input)) ?? "chat");
    let res: Response;
    try {
      res = await inner(input, init);
    } catch (err) {
      call?.failed(describe(err));
      w.meter?.answered(startedAtMs, null);
      throw err;
    }
    call?.status(res.status);
    res
      .clone()
      .text()
      .then((text) => {
        const answer = parseLlmAnswer(text);
        w.meter?.answered(startedAtMs, res.ok ? answer : null, text.length);
        call?.answered(answer, w.now(), text);
      })
      .catch((err: unknown) => call?.failed(`answer not recorded: ${String(err)}`));
    return res;
  };
}
