/**
 * @module emulator/policy/tools — tool calls of the simulated policy: picks an offered function tool (a
 * calculator-style one with an `expression` parameter first) and fills its JSON-schema required parameters with
 * plausible values, returned in the OpenAI `tool_calls` shape (`id`, `type: "function"`, `function{name, arguments}`).
 */
import { pyJsonDumps } from "../python/json-dumps.ts";
import type { Rng } from "../rng.ts";
import type { ToolCall, ToolSpec } from "./chat-shapes.ts";

const EXPRESSION_NAME = /^(expression|expr|equation|formula|calculation|math)$/i;

interface JsonSchemaProperty {
  type?: string | string[];
  enum?: unknown[];
}

/** The offered function tools that have a name. */
export function functionTools(tools: unknown): Array<ToolSpec & { function: { name: string } }> {
  if (!Array.isArray(tools)) return [];
  return tools.filter(
    (t): t is ToolSpec & { function: { name: string } } =>
      !!t && typeof t === "object" && (t as ToolSpec).type !== "custom" && typeof (t as ToolSpec).function?.name === "string",
  );
}

function propertiesOf(tool: ToolSpec): Record<string, JsonSchemaProperty> {
  const props = tool.function?.parameters?.["properties"];
  return props && typeof props === "object" ? (props as Record<string, JsonSchemaProperty>) : {};
}

/** A calculator-style tool (a parameter named like `expression`) if offered, else a seeded pick. */
export function pickTool<T extends ToolSpec>(tools: readonly T[], rng: Rng): T {
  return tools.find((t) => Object.keys(propertiesOf(t)).some((k) => EXPRESSION_NAME.test(k))) ?? rng.pick(tools);
}

/** Context for filling arguments: the task's expression, question text and numbers. */
export interface ArgumentContext {
  expression: string;
  question: string;
}

function stringValue(name: string, ctx: ArgumentContext): string {
  if (EXPRESSION_NAME.test(name)) return ctx.expression;
  if (/query|question|q$|search|text|prompt|input|content|message/i.test(name)) return ctx.question.slice(0, 80).trim() || "example";
  if (/city|location|place/i.test(name)) return "Paris";
  if (/date|day/i.test(name)) return "2026-01-01";
  if (/url|link/i.test(name)) return "https://example.com";
  return "example";
}

function valueFor(name: string, prop: JsonSchemaProperty, ctx: ArgumentContext, rng: Rng): unknown {
  if (Array.isArray(prop.enum) && prop.enum.length > 0) return rng.pick(prop.enum);
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
  const firstNumber = Number((ctx.question.match(/-?\d+(?:\.\d+)?/) ?? ["1"])[0]);
  switch (type) {
    case "number":
      return firstNumber;
    case "integer":
      return Math.round(firstNumber);
    case "boolean":
      return true;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return stringValue(name, ctx);
  }
}

/**
 * Builds one tool call for `tool`, filling its `required` parameters.
 * @example buildToolCall({type: "function", function: {name: "calculator", parameters: {type: "object",
 *   properties: {expression: {type: "string"}}, required: ["expression"]}}}, {expression: "17 + 25", question}, rng)
 *   → {id: "chatcmpl-tool-…", type: "function", function: {name: "calculator", arguments: "{\"expression\": \"17 + 25\"}"}}
 */
export function buildToolCall(tool: ToolSpec & { function: { name: string } }, ctx: ArgumentContext, rng: Rng): ToolCall {
  const props = propertiesOf(tool);
  const required = tool.function.parameters?.["required"];
  const names = Array.isArray(required) ? required.filter((n): n is string => typeof n === "string") : [];
  const args: Record<string, unknown> = {};
  for (const name of names) args[name] = valueFor(name, props[name] ?? {}, ctx, rng);
  return {
    id: `chatcmpl-tool-${rng.hex32()}`,
    type: "function",
    function: { name: tool.function.name, arguments: pyJsonDumps(args, { ensureAscii: false }) },
  };
}
