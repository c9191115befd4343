/** @module test/unit/functions/tools — defensive tool-call parsing and the calculator tool. */
import { describe, expect, it } from "vitest";
import { calculator, parseToolCalls, runToolCalls } from "../../../src/sdk/tools.ts";

const call = (id: unknown, name: unknown, args: unknown) => ({ id, type: "function", function: { name, arguments: args } });

describe("parseToolCalls", () => {
  it("parses good calls, object arguments and empty arguments", () => {
    const parsed = parseToolCalls([call("a", "calculator", '{"expression":"1+2"}'), call("b", "f", { x: 1 }), call("c", "g", "")], "p");
    expect(parsed.map((p) => p.ok && p.args)).toEqual([{ expression: "1+2" }, { x: 1 }, {}]);
    expect(parsed.map((p) => p.call.id)).toEqual(["a", "b", "c"]);
  });

  it("reports malformed calls instead of throwing", () => {
    const parsed = parseToolCalls([call(undefined, "f", "[1]"), "junk", call("d", undefined, "{}"), call("e", "f", "{bad")], "turn2");
    expect(parsed.map((p) => (p.ok ? "ok" : p.error))).toEqual([
      "the arguments of f must be a JSON object",
      "the tool call is not an object",
      "the tool call has no function name",
      "the arguments of f are not valid JSON: {bad",
    ]);
    expect(parsed.map((p) => p.call.id)).toEqual(["turn2_0", "turn2_1", "d", "e"]);
    expect(parseToolCalls(null, "x")).toEqual([]);
  });

  it("answers each call once, reporting handler errors as text", async () => {
    const parsed = parseToolCalls([call("a", "boom", "{}"), call("b", "calculator", '{"expression":"2*21"}')], "p");
    const out = await runToolCalls(parsed, {
      boom: () => {
        throw new Error("exploded");
      },
      calculator,
    });
    expect(out).toEqual([
      { role: "tool", tool_call_id: "a", content: "Error: exploded" },
      { role: "tool", tool_call_id: "b", content: "42" },
    ]);
  });
});

describe("calculator", () => {
  it("evaluates decimals and signs, tidies float noise, and explains refusals", () => {
    expect(calculator({ expression: "0.1 + 0.2" })).toBe("0.3");
    expect(calculator({ expression: "-(3 - 10) / 2" })).toBe("3.5");
    expect(calculator({ expression: "2**10" })).toMatch(/^Error: operator \*\* .* not allowed/);
    expect(calculator({ expression: "1/0" })).toMatch(/^Error: division by zero/);
    expect(calculator({ expression: 5 })).toMatch(/^Error: pass/);
  });
});
