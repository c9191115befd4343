/**
 * @module sdk/tools — defensive handling of OpenAI tool calls for rollout functions: a malformed call (no
 * function name, invalid JSON, non-object arguments, unknown tool) becomes an error tool message the model can
 * react to, never an exception that ends the episode (issue 4 §2). Also the shared `calculator` tool.
 */
import { evaluateArithmetic } from "../util/arithmetic.ts";

/** A tool call as it is echoed back in the assistant message: always with an id (synthesised when missing). */
export interface AssistantToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One parsed tool call: usable `args`, or the `error` to report to the model. */
export type ParsedToolCall =
  | { ok: true; call: AssistantToolCall; args: Record<string, unknown> }
  | { ok: false; call: AssistantToolCall; error: string };

/** A tool message answering one call (OpenAI `role: "tool"`). */
export interface ToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
}

/** A tool implementation: arguments in, text for the model out. Throwing is reported as `Error: …`. */
export type ToolHandler = (args: Record<string, unknown>) => string | Promise<string>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseOne(raw: unknown, fallbackId: string): ParsedToolCall {
  const entry = isRecord(raw) ? raw : {};
  const fn = isRecord(entry.function) ? entry.function : {};
  const id = typeof entry.id === "string" && entry.id !== "" ? entry.id : fallbackId;
  const name = typeof fn.name === "string" ? fn.name : "";
  const rawArgs = fn.arguments;
  const argText = typeof rawArgs === "string" ? rawArgs : rawArgs === undefined ? "" : JSON.stringify(rawArgs);
  const call: AssistantToolCall = { id, type: "function", function: { name, arguments: argText } };
  if (!isRecord(raw)) return { ok: false, call, error: "the tool call is not an object" };
  if (name === "") return { ok: false, call, error: "the tool call has no function name" };
  if (isRecord(rawArgs)) return { ok: true, call, args: rawArgs };
  if (argText.trim() === "") return { ok: true, call, args: {} };
  let args: unknown;
  try {
    args = JSON.parse(argText);
  } catch {
    return { ok: false, call, error: `the arguments of ${name} are not valid JSON: ${argText.slice(0, 200)}` };
  }
  if (!isRecord(args)) return { ok: false, call, error: `the arguments of ${name} must be a JSON object` };
  return { ok: true, call, args };
}

/**
 * Parses `message.tool_calls` defensively. Not an array → `[]`. A call without an id gets `${idPrefix}_${i}` (ids
 * come from the server's parser, not the model, so the call is still run); other faults give `ok: false`.
 */
export function parseToolCalls(toolCalls: unknown, idPrefix: string): ParsedToolCall[] {
  if (!Array.isArray(toolCalls)) return [];
  return toolCalls.map((raw, i) => parseOne(raw, `${idPrefix}_${i}`));
}

/**
 * Runs parsed calls in order and answers each with one tool message: the handler's text, or `Error: …` for a
 * malformed call, an unknown tool, or a handler that threw.
 */
export async function runToolCalls(
  calls: readonly ParsedToolCall[],
  handlers: Readonly<Record<string, ToolHandler>>,
): Promise<ToolMessage[]> {
  const out: ToolMessage[] = [];
  for (const parsed of calls) {
    let content: string;
    const handler = handlers[parsed.call.function.name];
    if (!parsed.ok) content = `Error: ${parsed.error}`;
    else if (!handler) {
      content = `Error: unknown tool "${parsed.call.function.name}"; available: ${Object.keys(handlers).join(", ")}`;
    } else {
      try {
        content = await handler(parsed.args);
      } catch (err) {
        content = `Error: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    out.push({ role: "tool", tool_call_id: parsed.call.id, content });
  }
  return out;
}

/** OpenAI tool definition of the calculator (`expression`: `+ - * /`, parentheses, decimals, unary minus). */
export const CALCULATOR_TOOL = {
  type: "function",
  function: {
    name: "calculator",
    description: "Evaluate an arithmetic expression with + - * / and parentheses, e.g. (80000 + 50000) * 1.5",
    parameters: {
      type: "object",
      properties: { expression: { type: "string", description: "the arithmetic expression to evaluate" } },
      required: ["expression"],
    },
  },
} as const;

/**
 * The calculator handler: evaluates `args.expression` with the hand-written parser (no `eval`, BC-19), decimals
 * and unary signs allowed. Rounds to 12 significant digits so `0.1 + 0.2` reads `0.3`.
 * @returns the value as text, or `Error: …` naming the problem and the accepted syntax
 */
export function calculator(args: Record<string, unknown>): string {
  const expression = args.expression;
  if (typeof expression !== "string") return 'Error: pass {"expression": "<arithmetic>"} as a string';
  const result = evaluateArithmetic(expression, { allowDecimals: true, allowUnary: true, maxChars: 500 });
  if (!result.ok) return `Error: ${result.message}. Use numbers, + - * / and parentheses.`;
  return String(Number(result.value.toPrecision(12)));
}
