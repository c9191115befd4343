/**
 * @module runtime/call-journal — the journal of an episode's answered LLM calls, the unit of the handover
 * (docs/design/long-episodes.md): each holder of an episode (the queue consumer, then the `EpisodeHost` legs) records
 * every LLM request it sends (key: SHA-256 of swarm, path and body, runtime/ghost-guard) with the answer it got
 * (status, headers, body text) or the error it failed with. The next holder runs the function again from the start
 * with the journal: a request whose key has an unused entry is answered from it and never sent (no call twice); a
 * request with no entry while entries are still unused means the function did not repeat itself (it is not
 * deterministic), and the attempt stops with {@link REPLAY_DIVERGED}. Once every entry was used, requests go out
 * as usual. At the handover the holder closes the gate: a request sent after it is held (never sent; it rejects
 * when the episode's stop fires), and {@link CallJournal.idle} resolves once no sent call is open, so each call
 * in flight at the gate is finished by the holder that sent it. Platform-free.
 */
import { EpisodeAbortError } from "../port/index.ts";
import { requestKeyOf } from "./ghost-guard.ts";
import type { FetchLike } from "./limits.ts";

/** Abort cause: a replayed function sent a request the journal does not hold while entries were unused, or left entries unused. */
export const REPLAY_DIVERGED = "replay_diverged";

/** One answered (or failed) LLM call. `error` set: the call failed with that message; else status, headers and body. */
export interface JournalEntry {
  /** hex SHA-256 of swarm, URL path and body (runtime/ghost-guard `requestKey`) */
  key: string;
  status?: number;
  /** the answer's headers, as pairs (content-length and content-encoding left out: the body is kept decoded) */
  headers?: Array<[string, string]>;
  /** the answer's body, as text (a stream's whole text, keepalives included) */
  body?: string;
  /** the error the call failed with (its name and message) */
  error?: string;
}

const DROPPED_HEADERS = new Set(["content-length", "content-encoding", "transfer-encoding"]);

/** The journal of one holder of an episode; see the module text. */
export class CallJournal {
  readonly #entries: JournalEntry[];
  readonly #replay = new Map<string, JournalEntry[]>();
  #unused = 0;
  #gateClosed = false;
  #inFlight = 0;
  #waiters: Array<() => void> = [];
  /** calls answered from the journal */
  replayed = 0;

  /**
   * @param entries what the earlier holders recorded, in the order their calls ended (empty: the first holder)
   * @param onDiverged stops the attempt (the episode's stop) when the replay diverges
   */
  constructor(
    entries: readonly JournalEntry[] = [],
    private readonly onDiverged: (cause: string, message: string) => void = () => undefined,
  ) {
    this.#entries = [...entries];
    for (const e of entries) {
      const list = this.#replay.get(e.key) ?? [];
      list.push(e);
      this.#replay.set(e.key, list);
      this.#unused++;
    }
  }

  /** Entries not answered yet (a finished replay with some left diverged). */
  get unused(): number {
    return this.#unused;
  }

  /** Calls sent by this holder and not over yet (their answer's body not read to its end). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Every entry: the earlier holders' and this one's finished calls, in the order they ended. */
  entries(): JournalEntry[] {
    return [...this.#entries];
  }

  /** Closes the gate: from now on a request that would be sent is held instead (see the module text). */
  closeGate(): void {
    this.#gateClosed = true;
  }

  /** Resolves once no call this holder sent is open (at once when none is). */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** `inner` with the journal in front of it, for one swarm's LLM calls. */
  wrap(swarm: string, inner: FetchLike): FetchLike {
    return async (input, init) => {
      const body = init?.body;
      // the SDKs send JSON text; another body cannot be keyed, so it is neither replayed nor journaled
      const key = typeof body === "string" ? await requestKeyOf(swarm, input, init!, body) : null;
      const kept = key === null ? undefined : this.#replay.get(key)?.shift();
      if (kept) {
        this.#unused--;
        this.replayed++;
        if (kept.error !== undefined) throw replayedError(kept.error);
        return new Response(kept.body ?? "", { status: kept.status ?? 200, headers: kept.headers ?? [] });
      }
      if (this.#unused > 0) {
        const message = `the replayed function sent a request the journal does not hold while ${this.#unused} answered call(s) were unused: it is not deterministic, so the episode cannot move between holders`;
        this.onDiverged(REPLAY_DIVERGED, message);
        throw new EpisodeAbortError(REPLAY_DIVERGED, message);
      }
      if (this.#gateClosed) return held(init?.signal);
      if (key === null) return inner(input, init);
      return this.#send(key, inner, input, init);
    };
  }

  async #send(key: string, inner: FetchLike, input: Parameters<FetchLike>[0], init: RequestInit | undefined): Promise<Response> {
    this.#inFlight++;
    let res: Response;
    try {
      res = await inner(input, init);
    } catch (err) {
      this.#finish({ key, error: errorText(err) });
      throw err;
    }
    const headers = [...res.headers].filter(([k]) => !DROPPED_HEADERS.has(k.toLowerCase()));
    if (!res.body) {
      this.#finish({ key, status: res.status, headers, body: "" });
      return res;
    }
    const [mine, kept] = res.body.tee();
    void new Response(kept).text().then(
      (text) => this.#finish({ key, status: res.status, headers, body: text }),
      (err: unknown) => this.#finish({ key, error: errorText(err) }),
    );
    return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
  }

  #finish(entry: JournalEntry): void {
    this.#entries.push(entry);
    this.#inFlight--;
    if (this.#inFlight === 0) this.#waiters.splice(0).forEach((w) => w());
  }
}

/** A request held at the closed gate: never sent; rejects with the signal's reason once it aborts. */
function held(signal: AbortSignal | null | undefined): Promise<Response> {
  return new Promise((_, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** The error a journaled failure is replayed as: a `TypeError` (a fetch failure) stays one, so the retries read it alike. */
function replayedError(text: string): Error {
  return text.startsWith("TypeError: ") ? new TypeError(text.slice("TypeError: ".length)) : new Error(text);
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
