/**
 * @module sdk/chat — small helpers rollout functions share around `chat.completions.create`: an explicit
 * system message first (BC-44), one call with infrastructure faults surfaced as {@link EpisodeAbortError}
 * (BC-38, BC-40, BC-43), and a seed-style client for `runAgentAndComputeReward(task, baseUrl, apiKey)`.
 */
import OpenAI from "openai";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { Task } from "../protocol/index.ts";
import { AbortCause, EpisodeAbortError } from "../port/index.ts";
import { findEpisodeAbortError, GuardReason, withLlmGuards } from "./llm-guards.ts";

/** What an agent loop needs from the context; a {@link RolloutContext} fits, and so does a seed-style client. */
export interface ChatIo {
  llm: OpenAI;
  /** the model name sent in requests (swarm servers ignore it, spec §9.3) */
  model: string;
  signal?: AbortSignal;
}

/**
 * Per-call timeout of swarm LLM calls, milliseconds: the newest proxy waits up to 3600 s for one generation (600
 * slices of 6 s, llm-routes §1 step 5) and answers 500 after that, so a client gives it that long plus 60 s (older
 * proxies gave up after ~300 s and answered themselves, BC-42). The SDKs time a call until its answer's headers:
 * a streamed answer opens at once and is then kept alive by its keepalive frames. A call still ends earlier when
 * the episode stops (its lifetime, the run's stop).
 */
export const SWARM_LLM_TIMEOUT_MS = 3_660_000;

/** One assistant turn: the message as returned and its finish reason (`stop`, `tool_calls`, `length` …). */
export interface ChatTurn {
  message: ChatCompletionMessage;
  finishReason: string;
}

/**
 * Messages for the first request: `task.init_messages` when present, else one user message with
 * `task.main_query`; either way with `systemPrompt` first unless the task already starts with a system message,
 * so the server never injects its default persona (BC-44).
 * @throws EpisodeAbortError `invalid_task` when the task has neither a query nor messages
 */
export function initialMessages(task: Task, systemPrompt: string): ChatCompletionMessageParam[] {
  const given = task.init_messages as unknown as ChatCompletionMessageParam[];
  const system: ChatCompletionMessageParam = { role: "system", content: systemPrompt };
  if (given.length > 0) return given[0]?.role === "system" ? [...given] : [system, ...given];
  if (task.main_query.trim() === "") {
    const id = JSON.stringify(task.task_id);
    throw new EpisodeAbortError(AbortCause.invalidTask, `task ${id} has no main_query or init_messages`);
  }
  return [system, { role: "user", content: task.main_query }];
}

/**
 * One non-streaming chat completion with `io.model` and `io.signal`.
 * @throws EpisodeAbortError for infrastructure faults: the guards' errors unwrapped from the SDK's
 *   `APIConnectionError` (BC-38, BC-40), an answer without choices, or `finish_reason: "abort"` (BC-43; checked
 *   here too in case the client was built without the guards). Other SDK errors (`APIError` 4xx/5xx) propagate.
 */
export async function completeChat(
  io: ChatIo,
  params: Omit<ChatCompletionCreateParamsNonStreaming, "model">,
): Promise<ChatTurn> {
  let completion;
  try {
    completion = await io.llm.chat.completions.create({ ...params, model: io.model }, { signal: io.signal });
  } catch (err) {
    throw findEpisodeAbortError(err) ?? err;
  }
  const choice = completion.choices?.[0];
  if (!choice?.message) {
    throw new EpisodeAbortError(GuardReason.infraError, "the chat completion has no choices[0].message");
  }
  const finishReason = String(choice.finish_reason ?? "stop");
  if (finishReason === "abort") {
    throw new EpisodeAbortError(GuardReason.llmAborted, 'the LLM answered with finish_reason "abort" (the server interrupted the generation, e.g. a weight sync)');
  }
  return { message: choice.message, finishReason };
}

/**
 * An OpenAI client for a seed-style function that receives only `baseUrl` and `apiKey`: `maxRetries: 0` and
 * {@link SWARM_LLM_TIMEOUT_MS} (BC-42), with the LLM guards on the global `fetch` (read at call time).
 */
export function seedClient(baseUrl: string, apiKey: string): OpenAI {
  const fetch = withLlmGuards((input, init) => globalThis.fetch(input, init));
  return new OpenAI({ baseURL: baseUrl, apiKey, organization: null, project: null, maxRetries: 0, timeout: SWARM_LLM_TIMEOUT_MS, fetch });
}
