/**
 * CPython compatibility of the texts the real server embeds in its answers: `base64.b64decode`,
 * `bytes.decode("utf-8")`, `json.loads` errors (expected strings captured from CPython 3.11), and the JSON the
 * server writes (FastAPI compact bodies with Python floats, `json.dumps` for SSE). Plus the manual clock.
 */
import { describe, expect, it } from "vitest";
import { createManualClock } from "../../../src/emulator/index.ts";
import { pyB64Decode, pyTruthy, pyUtf8Decode } from "../../../src/emulator/python/codecs.ts";
import { fastApiJsonText, pyFloatRepr, pyJsonDumps, SERVER_FLOAT_KEYS } from "../../../src/emulator/python/json-dumps.ts";
import { pyJsonLoads } from "../../../src/emulator/python/json-parse.ts";

const err = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return "no error";
};

describe("base64.b64decode", () => {
  it.each([
    ["not-base64!!", "Invalid base64-encoded string: number of data characters (9) cannot be 1 more than a multiple of 4"],
    ["abcde", "Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4"],
    ["a===", "Invalid base64-encoded string: number of data characters (1) cannot be 1 more than a multiple of 4"],
    ["abc", "Incorrect padding"],
    ["ab=", "Incorrect padding"],
    ["é", "string argument should contain only ASCII characters"],
  ])("%s → %s", (input, message) => {
    expect(err(() => pyB64Decode(input))).toBe(message);
  });

  it("skips non-alphabet characters and stops at a complete pad", () => {
    expect(Buffer.from(pyB64Decode("YWJj")).toString()).toBe("abc");
    expect(Buffer.from(pyB64Decode("ab==x")).toString("latin1")).toBe("i");
    expect(Buffer.from(pyB64Decode("YWI=YWI=")).toString()).toBe("ab");
    expect(pyB64Decode("====")).toHaveLength(0);
  });
});

describe("bytes.decode('utf-8')", () => {
  it.each([
    [[0x69, 0xb7, 0x1d], "'utf-8' codec can't decode byte 0xb7 in position 1: invalid start byte"],
    [[0xe2, 0x9c], "'utf-8' codec can't decode bytes in position 0-1: unexpected end of data"],
    [[0xf0, 0x9f, 0x98], "'utf-8' codec can't decode bytes in position 0-2: unexpected end of data"],
    [[0xed, 0xa0, 0x80], "'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte"],
    [[0xc0], "'utf-8' codec can't decode byte 0xc0 in position 0: invalid start byte"],
  ])("%j → %s", (bytes, message) => {
    expect(err(() => pyUtf8Decode(Uint8Array.from(bytes)))).toBe(message);
  });
  it("decodes valid text", () => expect(pyUtf8Decode(Uint8Array.from([0xe2, 0x9c, 0x93]))).toBe("✓"));
});

describe("json.loads", () => {
  it.each([
    ["", "Expecting value: line 1 column 1 (char 0)"],
    ["{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"],
    ['{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"],
    ['{"a":1,}', "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"],
    ["[1,]", "Expecting value: line 1 column 4 (char 3)"],
    ["[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"],
    ['"abc', "Unterminated string starting at: line 1 column 1 (char 0)"],
    ['{"a":1} x', "Extra data: line 1 column 9 (char 8)"],
    ['"a\u0001"', "Invalid control character at: line 1 column 3 (char 2)"],
    ['"\\x"', "Invalid \\escape: line 1 column 2 (char 1)"],
    ['"\\u12"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)"],
    ["01", "Extra data: line 1 column 2 (char 1)"],
    ['{"a":}', "Expecting value: line 1 column 6 (char 5)"],
    ["[\n1\n2]", "Expecting ',' delimiter: line 3 column 1 (char 4)"],
  ])("%j → %s", (text, message) => {
    expect(err(() => pyJsonLoads(text))).toBe(message);
  });

  it("parses what Python parses, NaN and Infinity included", () => {
    expect(pyJsonLoads(' {"a": [1, 2.5e1, "\\u00e9", true, null], "b": {}} ')).toEqual({ a: [1, 25, "é", true, null], b: {} });
    expect(pyJsonLoads("[NaN, -Infinity]")).toEqual([NaN, -Infinity]);
  });
});

describe("JSON the server writes", () => {
  it("renders Python float reprs", () => {
    expect([0, 60, -1, 0.1, 1e-5, 1e16, 1795944946.2630033, 123456].map(pyFloatRepr)).toEqual(["0.0", "60.0", "-1.0", "0.1", "1e-05", "1e+16", "1795944946.2630033", "123456.0"]);
  });
  it("FastAPI bodies are compact with floats under float fields", () => {
    expect(fastApiJsonText({ discard_episode_timeout: -1, llm_call_count: 0, completed_tasks_rewards: { t: [0, 1] }, s: "é" }, SERVER_FLOAT_KEYS)).toBe(
      '{"discard_episode_timeout":-1.0,"llm_call_count":0,"completed_tasks_rewards":{"t":[0.0,1.0]},"s":"é"}',
    );
  });
  it("json.dumps uses ', ' and ': ' and escapes non-ASCII", () => {
    expect(pyJsonDumps({ a: "é✓", b: [1, null, true] })).toBe('{"a": "\\u00e9\\u2713", "b": [1, null, true]}');
    expect(pyJsonDumps({ a: "é" }, { ensureAscii: false })).toBe('{"a": "é"}');
  });
  it("Python truthiness", () => {
    expect(["", 0, null, false, [], {}].map(pyTruthy)).toEqual([false, false, false, false, false, false]);
    expect(["x", 1, [0], { a: 0 }, NaN].map(pyTruthy)).toEqual([true, true, true, true, true]);
  });
});

describe("manual clock", () => {
  it("fires timers in due order, including ones scheduled by callbacks, and cancels sleeps", async () => {
    const clock = createManualClock(1000);
    const fired: string[] = [];
    clock.setTimer(() => fired.push("b@20"), 20);
    clock.setTimer(() => {
      fired.push("a@10");
      clock.setTimer(() => fired.push("c@15"), 5);
    }, 10);
    const cancelled = clock.setTimer(() => fired.push("never"), 12);
    clock.clearTimer(cancelled);
    const controller = new AbortController();
    const sleeping = clock.sleep(100, controller.signal);
    controller.abort(new Error("stop"));
    await expect(sleeping).rejects.toThrow("stop");
    await clock.advance(30);
    expect(fired).toEqual(["a@10", "c@15", "b@20"]);
    expect(clock.nowMs()).toBe(1030);
    expect(clock.pendingTimers()).toBe(0);
  });
});
