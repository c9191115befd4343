/**
 * @module emulator/proxy/completion — the chat completion the real proxy returns, byte-shaped like the recorded
 * transcript: the non-streaming `chat.completion` (pydantic dump order, `model: "unknown"`, `finish_reason:
 * "stop"`, spec §9.4) and the synthesised 3-chunk SSE stream with `data: [DONE]` (spec §9.5, transcript
 * "stream HTTP 200").
 */
import type { ChatUsage, ToolCall } from "../policy/chat-shapes.ts";
import { pyJsonDumps } from "../python/json-dumps.ts";

/** What the engine produced for one call. `created` is unix seconds; `id` is the timeline uuid (32 hex). */
export interface EngineCompletion {
  id: string;
  created: number;
  content: string;
  toolCalls: ToolCall[] | null;
  usage: ChatUsage | null;
}

const dumpToolCall = (c: ToolCall) => ({
  id: c.id,
  function: { arguments: c.function.arguments, name: c.function.name },
  type: "function",
});

/** The non-streaming body (an OpenAI `ChatCompletion` dump). */
export function chatCompletionBody(r: EngineCompletion): Record<string, unknown> {
  return {
    id: r.id,
    choices: [
      {
        finish_reason: "stop",
        index: 0,
        logprobs: null,
        message: {
          content: r.content,
          refusal: null,
          role: "assistant",
          annotations: null,
          audio: null,
          function_call: null,
          tool_calls: r.toolCalls ? r.toolCalls.map(dumpToolCall) : null,
        },
      },
    ],
    created: r.created,
    model: "unknown",
    object: "chat.completion",
    service_tier: null,
    system_fingerprint: null,
    usage: r.usage,
  };
}

function chunk(r: EngineCompletion, model: string, delta: Record<string, unknown>, finishReason: string | null, usage?: ChatUsage | null): string {
  const body: Record<string, unknown> = {
    id: `chatcmpl-${r.id}`,
    choices: [{ delta, finish_reason: finishReason, index: 0, logprobs: null }],
    created: r.created,
    model,
    object: "chat.completion.chunk",
  };
  if (usage) body["usage"] = usage;
  return `data: ${pyJsonDumps(body)}\n\n`;
}

/**
 * The SSE body for `stream: true`: role chunk, content chunk (with `tool_calls` when present), finish chunk with
 * `usage`, then `data: [DONE]`. Chunk `model` is the request's model, or `unknown_model` when empty.
 */
export function chatCompletionSse(r: EngineCompletion, requestModel: unknown): string {
  const model = typeof requestModel === "string" && requestModel ? requestModel : "unknown_model";
  const contentDelta: Record<string, unknown> = { content: r.content };
  if (r.toolCalls?.length) {
    contentDelta["tool_calls"] = r.toolCalls.map((c, index) => ({
      index,
      id: c.id,
      function: { arguments: c.function.arguments, name: c.function.name },
      type: "function",
    }));
  }
  return (
    chunk(r, model, { content: "", role: "assistant" }, null) +
    chunk(r, model, contentDelta, null) +
    chunk(r, model, { content: "" }, "stop", r.usage) +
    "data: [DONE]\n\n"
  );
}

/** Response headers of the SSE stream (Starlette `StreamingResponse(media_type="text/event-stream")`). */
export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8" } as const;
