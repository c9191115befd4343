/**
 * @module emulator/proxy/upstream — `--upstream URL --upstream-key KEY`: the engine's LLM is a real
 * OpenAI-compatible server instead of the simulated policy. Like the real engine, only `messages` and `tools`
 * are used (sampling parameters are the server's, spec §9.3); the swarm checks and counting stay in the proxy.
 */
import type { z } from "zod";
import type { UpstreamOptions } from "../options.ts";
import type { ChatMessage, ChatUsage, ToolCall } from "../policy/chat-shapes.ts";

/** Upstream settings after defaults (`timeoutMs` in milliseconds). */
export type ResolvedUpstream = z.output<typeof UpstreamOptions>;

/** What the upstream generated. */
export interface UpstreamReply {
  content: string;
  toolCalls: ToolCall[] | null;
  usage: ChatUsage | null;
}

interface OpenAiLikeResponse {
  choices?: Array<{ message?: { content?: unknown; tool_calls?: unknown } }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

function toToolCalls(raw: unknown): ToolCall[] | null {
  if (!Array.isArray(raw) || raw.length === 0) return null;
  return raw.map((c: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }, i) => ({
    id: typeof c.id === "string" ? c.id : `call_${i}`,
    type: "function" as const,
    function: {
      name: String(c.function?.name ?? ""),
      arguments: typeof c.function?.arguments === "string" ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
    },
  }));
}

/**
 * Sends one non-streaming chat completion upstream.
 * @throws Error on a transport error, a timeout (`timeoutMs`), a non-2xx answer or a body without `choices`
 * (the proxy then answers 500 Internal Server Error, as the real one does when the engine fails).
 */
export async function callUpstream(
  upstream: ResolvedUpstream,
  messages: readonly ChatMessage[],
  tools: unknown,
  requestModel: unknown,
  fetchImpl: typeof fetch = fetch,
): Promise<UpstreamReply> {
  const body: Record<string, unknown> = {
    model: upstream.model ?? (typeof requestModel === "string" && requestModel ? requestModel : "default"),
    messages,
    stream: false,
  };
  if (Array.isArray(tools) && tools.length > 0) {
    body["tools"] = tools;
    body["tool_choice"] = "auto";
  }
  const res = await fetchImpl(`${upstream.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${upstream.apiKey}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(upstream.timeoutMs),
  });
  if (!res.ok) throw new Error(`upstream answered HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const json = (await res.json()) as OpenAiLikeResponse;
  const message = json.choices?.[0]?.message;
  if (!message) throw new Error("upstream answer has no choices[0].message");
  const toolCalls = toToolCalls(message.tool_calls);
  const prompt = Number(json.usage?.prompt_tokens ?? 0);
  const completion = Number(json.usage?.completion_tokens ?? 0);
  return {
    content: typeof message.content === "string" ? message.content : "",
    toolCalls,
    usage: json.usage
      ? { completion_tokens: completion, prompt_tokens: prompt, total_tokens: prompt + completion, completion_tokens_details: null, prompt_tokens_details: null }
      : null,
  };
}
