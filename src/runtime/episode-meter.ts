/**
 * @module runtime/episode-meter — what one episode attempt measures of its own work, for the run's learning signals
 * and its cost (issue 22): per LLM call its latency, answer characters, tool calls, tokens and whether the length
 * limit cut it (read by runtime/llm-watch, the one wrapper every LLM route of the episode goes through), sandbox
 * seconds (none today: the project has no sandbox scope yet, so they stay 0), and the bytes its transcript will take. Platform-free and cheap: a
 * few numbers per call, sent once with the end report ({@link EpisodeSignals}).
 */
import { MAX_SIGNAL_CALLS, type EpisodeSignals } from "../port/index.ts";
import type { LlmAnswer } from "./llm-answer.ts";

/** The largest transcript a record keeps (runtime/transcript's default cap), bytes: the estimate never exceeds it. */
const TRANSCRIPT_CAP_BYTES = 256 * 1024;

/** The measurements of one attempt. */
export class EpisodeMeter {
  #calls = 0;
  #toolCalls = 0;
  #chars = 0;
  #prompt: number | null = null;
  #completion: number | null = null;
  #cut = 0;
  readonly #callMs: number[] = [];
  readonly #callTokens: (number | null)[] = [];
  #trafficBytes = 0;
  #sandboxSeconds = 0;

  /** @param now epoch ms clock; `startedAtMs` the invocation's start on this attempt (default: now) */
  constructor(
    private readonly now: () => number,
    readonly startedAtMs: number = now(),
  ) {}

  /** A request was sent: `requestBytes` of body (what the transcript keeps of it). */
  sent(requestBytes: number): void {
    this.#calls++;
    this.#trafficBytes += requestBytes;
  }

  /**
   * The answer of a sent request was read to its end (`answer` null when it failed or was not a 2xx).
   * @param startedAtMs epoch ms the request left; the latency runs to now
   */
  answered(startedAtMs: number, answer: LlmAnswer | null, bodyBytes = 0): void {
    this.#trafficBytes += bodyBytes;
    if (!answer) return;
    this.#toolCalls += answer.toolCalls;
    this.#chars += answer.chars;
    if (answer.cut) this.#cut++;
    if (answer.promptTokens !== null) this.#prompt = (this.#prompt ?? 0) + answer.promptTokens;
    if (answer.completionTokens !== null) this.#completion = (this.#completion ?? 0) + answer.completionTokens;
    if (this.#callMs.length < MAX_SIGNAL_CALLS) {
      this.#callMs.push(Math.max(0, this.now() - startedAtMs));
      this.#callTokens.push(answer.completionTokens);
    }
  }

  /** Sandbox time the attempt held (seconds), for a sandbox scope to call as it releases each sandbox (none calls it yet). */
  sandbox(seconds: number): void {
    if (Number.isFinite(seconds) && seconds > 0) this.#sandboxSeconds += seconds;
  }

  /** LLM calls sent so far. */
  get calls(): number {
    return this.#calls;
  }

  /**
   * The signals of the attempt so far.
   * @param transcript whether the attempt stores a transcript (its bytes are then estimated from the LLM traffic)
   */
  signals(transcript: boolean): EpisodeSignals {
    return {
      llmCalls: this.#calls,
      toolCalls: this.#toolCalls,
      responseChars: this.#chars,
      promptTokens: this.#prompt,
      completionTokens: this.#completion,
      lengthCut: this.#cut,
      callMs: [...this.#callMs],
      callTokens: [...this.#callTokens],
      wallMs: Math.max(0, this.now() - this.startedAtMs),
      transcriptBytes: transcript ? Math.min(TRANSCRIPT_CAP_BYTES, 2048 + this.#trafficBytes) : 0,
      sandboxSeconds: Math.round(this.#sandboxSeconds * 1000) / 1000,
    };
  }
}
