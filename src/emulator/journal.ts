/**
 * @module emulator/journal — what the server did, one event per line, for comparing with a client's own ledger
 * (the chaos suite): every claim, every accepted `/end_episode` (episode uuid, task, client, engine run and global
 * step, reward, dropped or not), every abort and janitor revert of a claimed episode, every engine status change
 * (a `WEIGHT_SYNCING` with a global step means that step's batch trained), every injected fault, and every counted
 * LLM call when it ends (route, episode, call index, start and end, and whether the client was still there: a call
 * that ends `client_gone` still trained, so a re-issue of it is a ghost sample). Served at
 * `GET /ajet_emulator/journal` (this process's events) and, with `--journal FILE`, appended to a JSON-lines file
 * that survives the emulator being killed and restarted.
 */

/** One journal event. `atMs` is epoch ms on the emulator's clock; `run` is the engine run (1 = first start). */
export type JournalEvent =
  | { ev: "claim"; atMs: number; episodeUuid: string; clientUuid: string; run: number; globalStep: number | null }
  | {
      ev: "end";
      atMs: number;
      episodeUuid: string;
      taskId: string;
      clientUuid: string;
      run: number;
      globalStep: number;
      reward: number | null;
      dropped: boolean;
    }
  | { ev: "abort"; atMs: number; episodeUuid: string; clientUuid: string }
  | { ev: "revert"; atMs: number; episodeUuid: string; clientUuid: string }
  | { ev: "status"; atMs: number; run: number; from: string; to: string; globalStep: number | null }
  | { ev: "fault"; atMs: number; kind: string; path: string; episodeUuid?: string }
  | {
      ev: "llm";
      /** when the call ended (answered, refused or given up) */
      atMs: number;
      /** when the pre-flight counted it */
      startMs: number;
      route: "chat" | "responses" | "messages";
      episodeUuid: string;
      clientUuid: string;
      /** the episode's 1-based LLM call number */
      callIndex: number;
      stream: boolean;
      /** `ok`: answered; `client_gone`: generated and recorded after the client left; `error`: an error answer */
      outcome: "ok" | "client_gone" | "error";
      /** the HTTP status the call ended with (200 for a stream that opened) */
      status: number;
    }
  | { ev: "boot"; atMs: number; pid: number | null };

/** The journal: events of this process in order, each also handed to `sink` (a file appender in the CLI). */
export class Journal {
  readonly events: JournalEvent[] = [];
  /** @param sink called with each event's JSON line (no newline); default none */
  constructor(private readonly sink?: (line: string) => void) {}

  /** Records one event. */
  add(event: JournalEvent): void {
    this.events.push(event);
    this.sink?.(JSON.stringify(event));
  }
}

/** Parses a journal file's text (JSON lines; a torn last line of a killed process is skipped). */
export function parseJournal(text: string): JournalEvent[] {
  const out: JournalEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as JournalEvent);
    } catch {
      // a line cut short by a kill
    }
  }
  return out;
}
