/**
 * @module functions/coding-agent — a long, tool-using agent on the Anthropic Messages API (issue 20 §5), the shape
 * of a Claude-Code-style harness: every turn is a streamed `messages.stream` call through `ctx.anthropicLlm`; the
 * model may read and write a scratch file and run a calculation; the episode ends when a turn asks for no tool (or
 * after `maxTurns`), and the final text is scored as a Countdown answer (`<answer>(equation)</answer>`).
 * `coding-agent-responses` is the same agent on the OpenAI Responses API (`ctx.llm.responses`, Codex-style).
 */
import type { MessageParam, Tool, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages/messages";
import {
  buildCountdownPrompt,
  calculator,
  defineRolloutFunction,
  findEpisodeAbortError,
  type RolloutContext,
  type RolloutOutput,
  scoreCountdown,
  type Task,
} from "ajet-edge";
import { countdownPuzzle } from "./countdown.ts";

/** The system prompt of both variants. */
export const CODING_AGENT_SYSTEM_PROMPT =
  "You are a careful agent with a scratch file and a calculator. Work in small steps: write notes to the scratch " +
  "file, check arithmetic with the calculate tool, and when you are sure give the final equation inside " +
  "<answer></answer> tags.";

/** Most LLM calls of one episode (tool rounds and the final answer). */
export const CODING_AGENT_MAX_TURNS = 6;

/** The largest scratch file, characters (a tool result must stay a small part of the prompt). */
const MAX_SCRATCH_CHARS = 16_000;

/** One tool of the agent: name, description, JSON schema of its input, and the handler over the episode's scratch. */
interface AgentTool {
  name: string;
  description: string;
  schema: { type: "object"; properties: Record<string, { type: string; description: string }>; required: string[] };
  run(args: Record<string, unknown>, scratch: Map<string, string>): string;
}

/** The tools: read and write a file of the episode's in-memory scratch space, and a calculation. */
export const CODING_AGENT_TOOLS: readonly AgentTool[] = [
  {
    name: "write_file",
    description: "Write (replace) a scratch file of this episode.",
    schema: { type: "object", properties: { path: { type: "string", description: "file name" }, content: { type: "string", description: "the new content" } }, required: ["path", "content"] },
    run(args, scratch) {
      if (typeof args["path"] !== "string" || typeof args["content"] !== "string") return 'Error: pass {"path": "<name>", "content": "<text>"} as strings';
      if (args["content"].length > MAX_SCRATCH_CHARS) return `Error: the content is ${args["content"].length} characters, over the limit of ${MAX_SCRATCH_CHARS}`;
      scratch.set(args["path"], args["content"]);
      return `wrote ${args["content"].length} characters to ${args["path"]}`;
    },
  },
  {
    name: "read_file",
    description: "Read a scratch file of this episode.",
    schema: { type: "object", properties: { path: { type: "string", description: "file name" } }, required: ["path"] },
    run(args, scratch) {
      const path = args["path"];
      if (typeof path !== "string") return 'Error: pass {"path": "<name>"} as a string';
      return scratch.get(path) ?? `Error: no file ${path} (written so far: ${[...scratch.keys()].join(", ") || "none"})`;
    },
  },
  {
    name: "calculate",
    description: "Evaluate an arithmetic expression with + - * / and parentheses.",
    schema: { type: "object", properties: { expression: { type: "string", description: "the arithmetic expression" } }, required: ["expression"] },
    run: (args) => calculator(args),
  },
];

/** Runs one tool call; an unknown tool or bad arguments answer an `Error: …` text the model can react to. */
export function runAgentTool(name: string, args: unknown, scratch: Map<string, string>): string {
  const tool = CODING_AGENT_TOOLS.find((t) => t.name === name);
  if (!tool) return `Error: no tool ${name}; the tools are ${CODING_AGENT_TOOLS.map((t) => t.name).join(", ")}`;
  if (typeof args !== "object" || args === null || Array.isArray(args)) return `Error: the input of ${name} must be a JSON object`;
  return tool.run(args as Record<string, unknown>, scratch);
}

/** The reward of a final text (Countdown scoring) with the run's facts. */
export function codingAgentOutput(task: Task, finalText: string, turns: number, toolCalls: number, stopReason: unknown): RolloutOutput {
  const puzzle = countdownPuzzle(task);
  const score = scoreCountdown(finalText, puzzle.target, puzzle.nums);
  return {
    reward: score.reward,
    is_success: score.isSuccess,
    metadata: { equation: score.equation, reason: score.reason, turns, tool_calls: toolCalls, stop_reason: stopReason ?? null, target: puzzle.target, nums: puzzle.nums },
  };
}

/**
 * The Anthropic tool loop: a streamed call per turn (`messages.stream(...).finalMessage()`), the assistant's blocks
 * echoed back, one `tool_result` per `tool_use`.
 * @throws EpisodeAbortError for a bad task and for endpoint faults (the guards' errors, unwrapped)
 */
export async function runCodingAgent(task: Task, ctx: RolloutContext, maxTurns = CODING_AGENT_MAX_TURNS): Promise<RolloutOutput> {
  const prompt = buildCountdownPrompt(countdownPuzzle(task));
  const tools: Tool[] = CODING_AGENT_TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.schema }));
  const messages: MessageParam[] = [{ role: "user", content: prompt }];
  const scratch = new Map<string, string>();
  let toolCalls = 0;
  for (let turn = 1; ; turn++) {
    const reply = await ctx.anthropicLlm.messages
      .stream({ model: ctx.model, max_tokens: 2048, system: CODING_AGENT_SYSTEM_PROMPT, messages, tools }, { signal: ctx.signal })
      .finalMessage()
      .catch((err: unknown) => Promise.reject(findEpisodeAbortError(err) ?? err));
    const uses = reply.content.filter((b) => b.type === "tool_use");
    const text = reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    if (uses.length === 0 || turn >= maxTurns) return codingAgentOutput(task, text, turn, toolCalls, reply.stop_reason);
    messages.push({ role: "assistant", content: reply.content });
    const results: ToolResultBlockParam[] = uses.map((use) => {
      toolCalls++;
      return { type: "tool_result", tool_use_id: use.id, content: runAgentTool(use.name, use.input, scratch) };
    });
    messages.push({ role: "user", content: results });
  }
}

export default defineRolloutFunction({
  name: "coding-agent",
  description: "Anthropic Messages tool loop (streamed; scratch file and calculator tools), scored as a Countdown answer",
  // long episodes: the run agrees to each weight sync once its share of the batch is done (issue 20 §3)
  sampleCollectionMethod: "rollout_until_all_clients_agree_sync_weight",
  run: (task, ctx) => runCodingAgent(task, ctx),
});
