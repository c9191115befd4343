/**
 * @module edge/run/board/live — the run page's live feed: hibernatable WebSockets accepted by the run's Durable
 * Object (`ctx.acceptWebSocket`, so idle viewers cost no duration), each sent the run page's snapshot on connect and
 * again after state changes, at most once per {@link MIN_PUSH_INTERVAL_MS} however many viewers there are. No
 * viewer polls anything; the DO does the work once and fans it out.
 */

/** The shortest gap between two pushes (ms): a busy run changes state many times a second. */
export const MIN_PUSH_INTERVAL_MS = 1_000;

/** The WebSocket tag of a dashboard viewer. */
const TAG = "dashboard";

/** The answer to a live-feed request for an object that holds no run (404, the API's JSON error). */
export function noRunResponse(): Response {
  return new Response(JSON.stringify({ error: { message: "no such run", issues: [{ code: "not_found", path: "id", message: "no run with this id; create one with POST /runs" }] } }), { status: 404, headers: { "content-type": "application/json" } });
}

/** Fans a run's snapshot out to its viewers. One per Durable Object instance. */
export class LiveFeed {
  #lastPushAtMs = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly ctx: DurableObjectState,
    /** the JSON text to send (built only when someone is watching) */
    private readonly snapshot: () => Promise<string>,
  ) {}

  /** Answers a WebSocket upgrade: accepts the server side (hibernatable) and sends the first snapshot. */
  async accept(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response(JSON.stringify({ error: { message: "expected a WebSocket upgrade", issues: [{ code: "invalid", path: "upgrade", message: "connect with a WebSocket client" }] } }), { status: 426, headers: { "content-type": "application/json" } });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [TAG]);
    server.send(await this.snapshot());
    return new Response(null, { status: 101, webSocket: client });
  }

  /** A viewer closed its side: close ours too (1005/1006 carry no code to echo: 1000). Never throws. */
  close(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "bye");
    } catch {
      // already closed
    }
  }

  /** A viewer asked again (any message): send it the snapshot now. */
  async resend(ws: WebSocket): Promise<void> {
    ws.send(await this.snapshot());
  }

  /** The state changed: push to every viewer now, or once the interval has passed. Never throws. */
  changed(nowMs: number): void {
    if (this.ctx.getWebSockets(TAG).length === 0 || this.#timer) return;
    const wait = this.#lastPushAtMs + MIN_PUSH_INTERVAL_MS - nowMs;
    this.#timer = setTimeout(() => void this.#push(), Math.max(0, wait));
  }

  async #push(): Promise<void> {
    this.#timer = null;
    this.#lastPushAtMs = Date.now();
    const sockets = this.ctx.getWebSockets(TAG);
    if (sockets.length === 0) return;
    let text: string;
    try {
      text = await this.snapshot();
    } catch {
      return;
    }
    for (const ws of sockets) {
      try {
        ws.send(text);
      } catch {
        // a closing socket; the runtime calls webSocketClose for it
      }
    }
  }
}
