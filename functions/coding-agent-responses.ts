/**
 * @module functions/coding-agent-responses — `coding-agent` on the OpenAI Responses API (issue 20 §1, §5), the shape
 * of a Codex-style harness: each turn is a streamed `responses.create({stream: true})` through `ctx.llm`, the
 * final `response.completed` event carries the turn's output items; `function_call` items are answered with
 * `function_call_output` items, and the whole history is sent again each turn (the server keeps no conversation
 * state: `previous_response_id` is ignored, llm-routes §3.1). Same tools, prompt and reward as `coding-agent`.
 */
import type { FunctionTool, Response, ResponseInputItem } from "openai/resources/responses/responses";
import { buildCountdownPrompt, defineRolloutFunction, EpisodeAbortError, findEpisodeAbortError, type RolloutContext, type RolloutOutput, type Task } from "ajet-edge";
import { CODING_AGENT_MAX_TURNS, CODING_AGENT_SYSTEM_PROMPT, CODING_AGENT_TOOLS, codingAgentOutput, runAgentTool } from "./coding-agent.ts";
import { countdownPuzzle } from "./countdown.ts";

/** One streamed Responses turn: the `response` of its terminal event. @throws EpisodeAbortError when the stream has none */
async function streamedTurn(ctx: RolloutContext, input: ResponseInputItem[], tools: FunctionTool[]): Promise<Response> {
  const stream = await ctx.llm.responses.create({ model: ctx.model, instructions: CODING_AGENT_SYSTEM_PROMPT, input, tools, stream: true }, { signal: ctx.signal });
  let final: Response | undefined;
  for await (const event of stream) {
    if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response;
  }
  // the guards fail a stream that ends without its terminal event; this covers a guard-less test context
  if (!final) throw new EpisodeAbortError("infra_error", "the Responses stream ended without response.completed");
  return final;
}

/** The text of a response's message items (a streamed `response` carries no SDK-added `output_text`). */
function outputText(response: Response): string {
  return response.output.flatMap((item) => (item.type === "message" ? item.content.map((part) => (part.type === "output_text" ? part.text : "")) : [])).join("");
}

/**
 * The Responses tool loop; see the module text.
 * @throws EpisodeAbortError for a bad task and for endpoint faults (the guards' errors, unwrapped)
 */
export async function runCodingAgentResponses(task: Task, ctx: RolloutContext, maxTurns = CODING_AGENT_MAX_TURNS): Promise<RolloutOutput> {
  const prompt = buildCountdownPrompt(countdownPuzzle(task));
  const tools: FunctionTool[] = CODING_AGENT_TOOLS.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.schema, strict: false }));
  const input: ResponseInputItem[] = [{ role: "user", content: prompt }];
  const scratch = new Map<string, string>();
  let toolCalls = 0;
  for (let turn = 1; ; turn++) {
    const reply = await streamedTurn(ctx, input, tools).catch((err: unknown) => Promise.reject(findEpisodeAbortError(err) ?? err));
    const calls = reply.output.filter((item) => item.type === "function_call");
    if (calls.length === 0 || turn >= maxTurns) return codingAgentOutput(task, outputText(reply), turn, toolCalls, reply.status);
    for (const item of reply.output) {
      if (item.type === "message" || item.type === "function_call") input.push(item as ResponseInputItem);
    }
    for (const call of calls) {
      toolCalls++;
      let args: unknown;
      try {
        args = JSON.parse(call.arguments);
      } catch {
        args = null;
      }
      const output = args === null ? `Error: the arguments of ${call.name} are not valid JSON` : runAgentTool(call.name, args, scratch);
      input.push({ type: "function_call_output", call_id: call.call_id, output });
    }
  }
}

export default defineRolloutFunction({
  name: "coding-agent-responses",
  description: "coding-agent on the OpenAI Responses API (streamed, function tools), scored as a Countdown answer",
  run: (task, ctx) => runCodingAgentResponses(task, ctx),
});
