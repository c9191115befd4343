/**
 * @module test/unit/rewards/boxed-scanner — the rules of the box scanner itself (src/rewards/boxed.ts): which forms
 * of `\boxed`/`\fbox` are one box, where a box ends, the content limit, and which box is "the last" (BC-01, BC-03,
 * BC-16). The math reward reads its answer through these; a scanner that reads one character too many or too few
 * scores the wrong answer.
 */
import { describe, expect, it } from "vitest";
import { extractLastBoxed, findLastBox, lastBoxedSpan, matchBrace, scanBox, stripBox } from "../../../src/rewards/index.ts";

describe("box scanner: whitespace between the marker and its content", () => {
  for (const [name, gap] of [["space", " "], ["tab", "\t"], ["newline", "\n"], ["carriage return", "\r"], ["CRLF", "\r\n"]] as const) {
    it(`a ${name} between \\boxed and its brace still opens the box`, () => {
      expect(extractLastBoxed(`so \\boxed${gap}{42}.`)).toBe("42");
      expect(stripBox(`\\fbox${gap}{7}`)).toBe("7");
    });

    it(`a brace-less token ends at a ${name}`, () => {
      expect(extractLastBoxed(`\\boxed 5${gap}apples`)).toBe("5");
      expect(extractLastBoxed(`\\boxed${gap}9`)).toBe("9");
    });
  }

  it("a brace-less token ends at `$` (inline math closes)", () => {
    expect(extractLastBoxed("answer: $\\boxed 12$ done")).toBe("12");
  });
});

describe("box scanner: a marker that is not a box", () => {
  it("`\\boxed` glued to a letter or digit is another command, and an earlier real box is read instead", () => {
    for (const next of ["a", "z", "A", "Z", "text", "5"]) {
      expect(extractLastBoxed(`\\boxed{3} and then \\boxed${next}{9}`)).toBe("3");
      expect(findLastBox(`\\boxed${next}{9}`)).toBeNull();
    }
  });

  it("a marker at the very start that is not a box ends the search (no box, no endless rescan)", () => {
    expect(findLastBox("\\boxedx")).toBeNull();
    expect(findLastBox("\\fbox")).toBeNull();
    expect(extractLastBoxed("\\boxed5 is not read")).toBeNull();
  });

  it("`\\boxed` followed only by whitespace or nothing has no answer (not an empty one)", () => {
    expect(findLastBox("the answer is \\boxed")).toBeNull();
    expect(findLastBox("the answer is \\boxed   ")).toBeNull();
    expect(findLastBox("the answer is \\boxed\n")).toBeNull();
  });

  it("a text without a box gives null from every reader", () => {
    expect(extractLastBoxed("the answer is 4")).toBeNull();
    expect(lastBoxedSpan("the answer is 4")).toBeNull();
    expect(stripBox("4")).toBeNull();
    expect(stripBox("\\boxedtext{4}")).toBeNull();
  });
});

describe("box scanner: balanced braces and escapes", () => {
  it("an escaped brace inside the box neither opens nor closes it", () => {
    expect(extractLastBoxed("\\boxed{\\}}")).toBe("\\}");
    expect(extractLastBoxed("\\boxed{a\\{b}")).toBe("a\\{b");
    expect(extractLastBoxed("\\boxed{\\{1,2\\}} end")).toBe("\\{1,2\\}");
  });

  it("matchBrace returns the index of the closing brace, -1 when the text ends first, -2 when the limit is hit first", () => {
    expect(matchBrace("{ab}", 0, 10)).toBe(3);
    expect(matchBrace("x{a{b}c}y", 1, 10)).toBe(7);
    expect(matchBrace("{abc", 0, 10)).toBe(-1);
    expect(matchBrace("{abcdef}", 0, 3)).toBe(-2);
  });

  it("content of exactly maxContentChars is read; one character more is too long", () => {
    expect(matchBrace("{abc}", 0, 3)).toBe(4);
    expect(matchBrace("{abcd}", 0, 3)).toBe(-2);
    expect(extractLastBoxed("\\boxed{abc}", 3)).toBe("abc");
    expect(findLastBox("\\boxed{abcd}", 3)).toMatchObject({ kind: "too_long", marker: "\\boxed", start: 0 });
    expect(findLastBox("\\boxed{abcd}", 4)).toMatchObject({ kind: "box", content: "abcd", start: 0, end: 12 });
  });

  it("a brace-less token of exactly maxContentChars is read whole; a longer one is too long", () => {
    expect(extractLastBoxed("\\boxed 123", 3)).toBe("123");
    expect(extractLastBoxed("\\boxed 123 more", 3)).toBe("123");
    expect(findLastBox("\\boxed 1234", 3)).toMatchObject({ kind: "too_long", marker: "\\boxed", start: 0 });
    expect(findLastBox("x \\boxed 1234 y", 3)).toMatchObject({ kind: "too_long", start: 2 });
  });

  it("the text ending inside the box is `unbalanced`, with the marker and where it starts", () => {
    expect(findLastBox("so \\fbox{12")).toEqual({ kind: "unbalanced", marker: "\\fbox", start: 3 });
    expect(scanBox("\\boxed{12", 0, "\\boxed", 100)).toEqual({ kind: "unbalanced", marker: "\\boxed", start: 0 });
  });

  it("scanBox gives the whole span of the box, end exclusive", () => {
    expect(scanBox("a \\boxed{7} b", 2, "\\boxed", 100)).toEqual({ kind: "box", marker: "\\boxed", start: 2, end: 11, content: "7" });
    expect(scanBox("a \\boxed 7 b", 2, "\\boxed", 100)).toEqual({ kind: "box", marker: "\\boxed", start: 2, end: 10, content: "7" });
  });
});

describe("box scanner: which box is the last", () => {
  it("the marker that starts last wins, whichever command it is", () => {
    expect(extractLastBoxed("\\boxed{1} then \\fbox{2}")).toBe("2");
    expect(extractLastBoxed("\\fbox{1} then \\boxed{2}")).toBe("2");
    expect(lastBoxedSpan("\\boxed{1} then \\fbox{2} end")).toBe("\\fbox{2}");
  });

  it("a truncated final box wins over a complete earlier one (no answer)", () => {
    expect(findLastBox("\\boxed{1} then \\fbox{2")).toMatchObject({ kind: "unbalanced", marker: "\\fbox" });
    expect(extractLastBoxed("\\boxed{1} then \\boxed{2")).toBeNull();
  });
});

describe("stripBox: only a span that is exactly one complete box", () => {
  it("strips the command of one whole box", () => {
    expect(stripBox("\\boxed{12}")).toBe("12");
    expect(stripBox("\\boxed 5")).toBe("5");
  });

  it("a box followed by more text, or an unbalanced box, is not one box", () => {
    expect(stripBox("\\boxed{1} extra")).toBeNull();
    expect(stripBox("\\boxed 5 extra")).toBeNull();
    expect(stripBox("\\fbox{12")).toBeNull();
  });
});
