/** One reader for the answers of every LLM route (runtime/llm-answer), and the meter fed from it (runtime/episode-meter). */
import { describe, expect, it } from "vitest";
import { parseLlmAnswer } from "../../../src/runtime/llm-answer.ts";
import { EpisodeMeter } from "../../../src/runtime/episode-meter.ts";
import { watchLlm } from "../../../src/runtime/llm-watch.ts";

const sse = (chunks: unknown[]) => `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`;

describe("LLM answers of every route", () => {
  it("a chat completion: text, tool-call arguments, usage and the length cut", () => {
    const body = {
      choices: [{ finish_reason: "length", message: { role: "assistant", content: "The answer is 18", tool_calls: [{ id: "c1", type: "function", function: { name: "calc", arguments: '{"x":1}' } }] } }],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    };
    const a = parseLlmAnswer(JSON.stringify(body));
    expect(a).toMatchObject({ chars: 16 + 7, toolCalls: 1, promptTokens: 12, completionTokens: 7, cut: true });
    expect(a.reply).toEqual(body.choices[0]!.message);
  });

  it("a chat completion stream: deltas joined, tool calls by index, the usage chunk", () => {
    const a = parseLlmAnswer(
      sse([
        { choices: [{ delta: { content: "ab" } }] },
        { choices: [{ delta: { tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: '{"a"' } }] } }] },
        { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ":2}" } }] }, finish_reason: "tool_calls" }] },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } },
      ]),
    );
    expect(a).toMatchObject({ chars: 2 + 7, toolCalls: 1, promptTokens: 5, completionTokens: 3, cut: false });
    expect(a.reply).toEqual({ role: "assistant", content: "ab", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a":2}' } }] });
  });

  it("a Responses object: message text, function calls, input/output tokens, incomplete by max_output_tokens", () => {
    const a = parseLlmAnswer(
      JSON.stringify({
        object: "response", status: "incomplete", incomplete_details: { reason: "max_output_tokens" },
        output: [{ type: "message", content: [{ type: "output_text", text: "hello" }] }, { type: "function_call", call_id: "k", name: "g", arguments: "{}" }],
        usage: { input_tokens: 9, output_tokens: 4 },
      }),
    );
    expect(a).toMatchObject({ chars: 5 + 2, toolCalls: 1, promptTokens: 9, completionTokens: 4, cut: true });
  });

  it("an Anthropic message stream: text and input-JSON deltas, usage of start and delta, max_tokens", () => {
    const a = parseLlmAnswer(
      sse([
        { type: "message_start", message: { usage: { input_tokens: 20, output_tokens: 1 } } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
        { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "t", name: "h" } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"q":1}' } },
        { type: "message_delta", delta: { stop_reason: "max_tokens" }, usage: { output_tokens: 11 } },
      ]),
    );
    expect(a).toMatchObject({ chars: 2 + 7, toolCalls: 1, promptTokens: 20, completionTokens: 11, cut: true });
  });

  it("an Anthropic message, and a body no route matches (the raw text, nothing counted)", () => {
    expect(parseLlmAnswer(JSON.stringify({ type: "message", content: [{ type: "text", text: "abc" }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 2 } }))).toMatchObject({
      chars: 3, toolCalls: 0, promptTokens: 1, completionTokens: 2, cut: false,
    });
    expect(parseLlmAnswer("oops")).toEqual({ reply: "oops", chars: 0, toolCalls: 0, promptTokens: null, completionTokens: null, cut: false });
  });

  it("a prompt count of 0 beside output tokens is not reported (converters send 0)", () => {
    expect(parseLlmAnswer(JSON.stringify({ choices: [{ message: { content: "x" } }], usage: { prompt_tokens: 0, completion_tokens: 3 } }))).toMatchObject({ promptTokens: null, completionTokens: 3 });
  });
});

describe("the episode meter behind the LLM watch", () => {
  it("measures each call once: latency, characters, tokens, the cut; a failed call counts as a call without an answer", async () => {
    let t = 1_000;
    const meter = new EpisodeMeter(() => t);
    const answers = [
      new Response(JSON.stringify({ choices: [{ finish_reason: "stop", message: { content: "12345" } }], usage: { prompt_tokens: 10, completion_tokens: 5 } })),
      new Response(JSON.stringify({ choices: [{ finish_reason: "length", message: { content: "abc" } }] })),
    ];
    let i = 0;
    const fetch = watchLlm("default", async () => {
      t += 250;
      const next = answers[i++];
      if (!next) throw new Error("connection reset");
      return next;
    }, { now: () => t, meter });
    const body = JSON.stringify({ messages: [{ role: "user", content: "q" }] });
    // the meter reads a clone of each answer alongside the caller: settle it before the clock moves on
    const settle = () => new Promise((r) => setTimeout(r, 0));
    await (await fetch("http://llm/v1/chat/completions", { method: "POST", body })).text();
    await settle();
    await (await fetch("http://llm/v1/chat/completions", { method: "POST", body })).text();
    await settle();
    await expect(fetch("http://llm/v1/chat/completions", { method: "POST", body })).rejects.toThrow(/reset/);
    const s = meter.signals(false);
    expect(s).toMatchObject({ llmCalls: 3, toolCalls: 0, responseChars: 8, promptTokens: 10, completionTokens: 5, lengthCut: 1, callMs: [250, 250], callTokens: [5, null], wallMs: 750, transcriptBytes: 0 });
    // with a transcript, its bytes are estimated from the traffic (a floor of 2 KB of metadata)
    expect(meter.signals(true).transcriptBytes).toBeGreaterThan(2048 + 3 * body.length);
  });
});
