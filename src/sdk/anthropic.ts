/**
 * @module sdk/anthropic — the Anthropic client a rollout function gets for a swarm episode (issue 20 §1): the
 * official `@anthropic-ai/sdk` client with its Messages API (`messages.create`, `messages.stream`, tool use), bound
 * the way that SDK expects a server: the base URL is the server's root without `/v1` (the SDK appends
 * `/v1/messages` itself, llm-routes §9.2) and the episode key is the SDK's `apiKey` (this SDK version sends it as
 * `Authorization: Bearer`) and also `x-api-key` (what earlier Anthropic SDKs send, and what the server reads when
 * `Authorization` is absent, llm-routes §4.1): either way the server finds the episode. The swarm server serves only
 * `/v1/messages` of the Anthropic API, so the client carries only that resource: the SDK's other resources (models,
 * batches of the beta API, files …) would be 300 KiB more in every episode's bundle for routes that answer 404.
 */
import { BaseAnthropic, type ClientOptions } from "@anthropic-ai/sdk/client";
import { Messages } from "@anthropic-ai/sdk/resources/messages/messages";

/** The official Anthropic client with the Messages API (what the swarm server serves). */
export class AnthropicMessagesClient extends BaseAnthropic {
  messages: Messages = new Messages(this);
}

/**
 * The Anthropic base URL of an episode: its OpenAI-compatible base URL (`<server>/v1`) without the trailing `/v1`
 * (a client that keeps it calls `/v1/v1/messages`, a 404: llm-routes §9.2). A gateway prefix stays.
 * @example anthropicBaseUrl("http://gpu:10086/v1") === "http://gpu:10086"
 */
export function anthropicBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** What an episode's Anthropic client is built from. */
export interface EpisodeAnthropicOptions {
  /** the episode's OpenAI-compatible base URL (`<server>/v1`); the `/v1` is taken off here */
  baseUrl: string;
  /** the episode key (`sk-ajet-…`), the SDK's `apiKey`, also sent as `x-api-key` */
  apiKey: string;
  /** the guarded fetch every request goes through */
  fetch: ClientOptions["fetch"];
  /** per-call timeout, ms (until the answer's headers: a stream's body is not cut) */
  timeoutMs: number;
  /** headers on every call (a swarm's gateway headers) */
  headers?: Record<string, string>;
}

/**
 * An Anthropic client on one episode: `maxRetries: 0` (a retried call is a second sample of the same turn, BC-42;
 * the runtime retries what is safe itself), and `authToken: null` so an `ANTHROPIC_AUTH_TOKEN` in the process
 * environment is never sent to a swarm server next to the episode key.
 */
export function episodeAnthropic(o: EpisodeAnthropicOptions): AnthropicMessagesClient {
  return new AnthropicMessagesClient({
    baseURL: anthropicBaseUrl(o.baseUrl),
    apiKey: o.apiKey,
    authToken: null,
    maxRetries: 0,
    timeout: o.timeoutMs,
    fetch: o.fetch,
    defaultHeaders: { ...o.headers, "x-api-key": o.apiKey },
  });
}
