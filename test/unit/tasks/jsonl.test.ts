/** @module test/unit/tasks/jsonl — JSONL splitting: BOM, CRLF, U+2028/U+2029, blank lines, bad lines. */
import { describe, expect, it } from "vitest";
import { parseJsonlRows, parseTasks, splitJsonlRecords } from "../../../src/tasks/index.ts";

const row = (q: string, extra: Record<string, unknown> = {}) => JSON.stringify({ main_query: q, ...extra });

describe("splitJsonlRecords", () => {
  it("strips a UTF-8 BOM so the first row parses", () => {
    const text = `\uFEFF${row("first")}\n${row("second")}\n`;
    const { rows, rejected } = parseJsonlRows(text);
    expect(rejected).toEqual([]);
    expect(rows.map((r) => r.value["main_query"])).toEqual(["first", "second"]);
  });

  it("keeps raw U+2028 / U+2029 inside a JSON string on one line", () => {
    const text = `{"main_query": "a\u2028b\u2029c"}\n{"main_query": "d"}`;
    const records = splitJsonlRecords(text);
    expect(records).toHaveLength(2);
    const { rows } = parseJsonlRows(text);
    expect(rows[0]!.value["main_query"]).toBe("a\u2028b\u2029c");
    expect(rows.map((r) => r.line)).toEqual([1, 2]);
  });

  it("ends lines at CRLF and drops the CR, but keeps a lone CR inside a line", () => {
    const text = `${row("a")}\r\n${row("b\r")}\r\n`;
    const { rows, rejected } = parseJsonlRows(text);
    expect(rejected).toEqual([]);
    expect(rows.map((r) => r.value["main_query"])).toEqual(["a", "b\r"]);
    expect(splitJsonlRecords(`${row("x")}\r${row("y")}`)).toHaveLength(1);
  });

  it("skips blank and whitespace-only lines; line numbers stay physical, indices count non-blank lines", () => {
    const text = `\n${row("a")}\n   \n\t\r\n${row("b")}\n\n`;
    expect(splitJsonlRecords(text).map(({ line, index }) => [line, index])).toEqual([
      [2, 0],
      [5, 1],
    ]);
  });

  it("handles an empty text and a last line without a newline", () => {
    expect(splitJsonlRecords("")).toEqual([]);
    expect(splitJsonlRecords("\uFEFF")).toEqual([]);
    expect(splitJsonlRecords(row("z")).map((r) => r.text)).toEqual([row("z")]);
  });
});

describe("bad lines are rejected and counted with their line number", () => {
  it("invalid JSON and non-object rows", () => {
    const text = [row("ok"), "{not json", "", "[1, 2]", "42", "null", row("ok2")].join("\n");
    const { rows, rejected } = parseJsonlRows(text);
    expect(rows.map((r) => [r.line, r.index])).toEqual([
      [1, 0],
      [7, 5],
    ]);
    expect(rejected.map((r) => r.line)).toEqual([2, 4, 5, 6]);
    expect(rejected[0]!.reason).toMatch(/^invalid JSON: /);
    expect(rejected[1]!.reason).toBe("a row must be a JSON object, got an array");
    expect(rejected[2]!.reason).toBe("a row must be a JSON object, got a number");
    expect(rejected[3]!.reason).toBe("a row must be a JSON object, got null");
  });

  it("a rejected line keeps its index, so fixing it does not renumber later rows", () => {
    const broken = parseTasks([row("a"), "{oops", row("c")].join("\n"), { name: "d", kind: "generic" });
    const fixed = parseTasks([row("a"), row("b"), row("c")].join("\n"), { name: "d", kind: "generic" });
    expect(broken.tasks.map((t) => t.task_id)).toEqual(["d:train:0", "d:train:2"]);
    expect(fixed.tasks.map((t) => t.task_id)).toEqual(["d:train:0", "d:train:1", "d:train:2"]);
    expect(broken.report).toMatchObject({ accepted: 2, rejected: [{ line: 2 }] });
  });

  it("strict mode throws, naming the line", () => {
    expect(() => parseTasks(`${row("a")}\n{oops`, { name: "d", kind: "generic", strict: true })).toThrow(
      /d:train: 1 accepted, 1 rejected \(line 2: invalid JSON/,
    );
  });
});
