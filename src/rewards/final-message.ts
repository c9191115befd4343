/**
 * @module rewards/final-message — picks the text to score: the FINAL assistant message only, never the joined
 * conversation, so a prompt's `\boxed{}` or `<answer>` template cannot give credit (BC-04).
 */

/** A chat message as the OpenAI API shapes it; only `role` and `content` are read. */
export interface ChatMessageLike {
  role: string;
  content?: unknown;
}

/**
 * Plain text of a message `content`: a string as is; an array of parts joined from their `text` fields (other
 * part types are skipped); `null`/anything else → `""`.
 */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === "string") texts.push(part);
    else if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
      texts.push((part as { text: string }).text);
    }
  }
  return texts.join("");
}

/** Text of the last `assistant` message, or `""` when there is none (BC-04: that scores as "no answer"). */
export function finalAssistantText(messages: readonly ChatMessageLike[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant") return messageText(m.content);
  }
  return "";
}
