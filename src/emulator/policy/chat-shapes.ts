/**
 * @module emulator/policy/chat-shapes — the chat shapes the simulated policy reads and writes (OpenAI chat
 * messages, function tools and tool calls), their text, and the token usage it reports.
 *
 * Usage: the recorded real-server transcript reports `completion_tokens` = whitespace words of the reply and
 * `prompt_tokens` = Σ over the messages the model saw of (whitespace words + 4), e.g. 26 for the transcript's
 * two-message arithmetic prompt. The emulator counts the same way (a word count, not a tokenizer).
 */

/** An OpenAI chat message as sent by clients (only the fields the simulator reads). */
export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
  name?: string;
}

/** An OpenAI function tool (`{type: "function", function: {name, parameters}}`). */
export interface ToolSpec {
  type?: string;
  function?: { name?: string; description?: string; parameters?: Record<string, unknown> };
}

/** An OpenAI tool call as the proxy returns it. `arguments` is a JSON string. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Text of a message: a string content, or the `text` of its content parts, plus tool-call arguments. */
export function messageText(m: ChatMessage): string {
  const parts: string[] = [];
  if (typeof m.content === "string") parts.push(m.content);
  else if (Array.isArray(m.content)) {
    for (const p of m.content) if (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string") parts.push((p as { text: string }).text);
  }
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls as Array<{ function?: { name?: unknown; arguments?: unknown } }>) {
      if (typeof c?.function?.name === "string") parts.push(c.function.name);
      if (typeof c?.function?.arguments === "string") parts.push(c.function.arguments);
    }
  }
  return parts.join(" ");
}

/** Texts of the user (and system) messages, last first: where the simulator looks for the task. */
export function taskTexts(messages: readonly ChatMessage[]): string[] {
  const user = messages.filter((m) => m.role === "user").map(messageText).reverse();
  const system = messages.filter((m) => m.role === "system").map(messageText);
  return [...user, ...system];
}

/** Python `len(text.split())`. */
export function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** OpenAI `usage` as the real proxy returns it (pydantic dump order). */
export interface ChatUsage {
  completion_tokens: number;
  prompt_tokens: number;
  total_tokens: number;
  completion_tokens_details: null;
  prompt_tokens_details: null;
}

/** Usage for a reply to `messages` (the messages the model saw, after the default system prompt was injected). */
export function chatUsage(messages: readonly ChatMessage[], content: string, toolCalls: readonly ToolCall[] | null): ChatUsage {
  const prompt = messages.reduce((n, m) => n + wordCount(messageText(m)) + 4, 0);
  const calls = (toolCalls ?? []).map((c) => `${c.function.name} ${c.function.arguments}`).join(" ");
  const completion = wordCount(content) + wordCount(calls);
  return {
    completion_tokens: completion,
    prompt_tokens: prompt,
    total_tokens: prompt + completion,
    completion_tokens_details: null,
    prompt_tokens_details: null,
  };
}
