/**
 * @module test/unit/functions/testing-types — the scripted-reply types reject shapes that would silently script
 * something else: an OpenAI wire-shaped tool call (`{type: "function", function: {…}}`) once type-checked as a
 * nameless call and became `unknown tool`. `npm run typecheck` checks this file: each `@ts-expect-error` fails the
 * check when the line compiles.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { createTestContext, scriptedReplies, type ScriptedMessage, type ScriptedToolCall } from "../../../src/sdk/testing.ts";

describe("ScriptedToolCall types", () => {
  it("take the flat shape and refuse the wire shape at compile time", async () => {
    const flat: ScriptedToolCall = { name: "calculator", arguments: { expression: "1+1" } };
    expectTypeOf(flat.name).toEqualTypeOf<string>();
    // @ts-expect-error the OpenAI wire shape: the name is inside `function`, so `name` is missing
    const wire: ScriptedToolCall = { id: "call_1", type: "function", function: { name: "calculator", arguments: "{}" } };
    // @ts-expect-error a call without a name
    const nameless: ScriptedToolCall = { arguments: "{}" };
    const fromVariable = { id: "call_1", type: "function", function: { name: "calculator", arguments: "{}" } };
    // @ts-expect-error not a fresh literal either: still no `name`, and `type`/`function` are never
    const message: ScriptedMessage = { toolCalls: [fromVariable] };
    expectTypeOf<ScriptedToolCall>().toHaveProperty("name");

    const { ctx } = createTestContext({ reply: scriptedReplies({ toolCalls: [flat] }) });
    const turn = await ctx.llm.chat.completions.create({ model: "m", messages: [{ role: "user", content: "q" }] });
    expect(turn.choices[0]?.message.tool_calls?.[0]).toMatchObject({ type: "function", function: { name: "calculator", arguments: '{"expression":"1+1"}' } });
    expect([wire, nameless, message].length).toBe(3);
  });
});
