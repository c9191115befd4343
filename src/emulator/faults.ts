/**
 * @module emulator/faults — fault kinds the emulator injects by name (`--fault KIND[:RATE[:MAX]]` on the CLI, or
 * `faults` in the options), so a test suite can drive an emulator in another process. Each kind becomes a hook
 * (hooks.ts); `RATE` (0–1, default 1) is the share of matching requests that fail, drawn from the emulator's seed;
 * `MAX` caps how many are injected in all (default unlimited); a 4th field `first` (`KIND:RATE:MAX:first`, MAX may
 * be empty) hits only an episode's first request of that kind, never its resends; a 4th field `Ns` (`KIND:1::30s`)
 * is a time window: the fault hits matching requests for N seconds from its first injection (on the emulator's
 * clock), then never again (a gateway outage that ends).
 *
 * | kind | what happens |
 * |---|---|
 * | `end-500-after-act` | `/end_episode` is handled (the reward is accepted), then answered 500 |
 * | `end-drop-after-act` | `/end_episode` is handled, then the connection is dropped without an answer |
 * | `end-drop-closing` | `/end_episode` is handled; when it closed the batch (the engine left ROLLING while handling it) the connection is dropped without an answer |
 * | `end-502-html` | `/end_episode` is answered 502 with a gateway's HTML page, without acting (a proxy in front failed) |
 * | `claim-lost` | `/claim_episode` is handled (the episode is claimed), then the connection is dropped |
 * | `claim-500-after-act` | `/claim_episode` is handled, then answered 500 |
 * | `abort-500` | `/abort_episode` answers 500 without acting (the claim stays held) |
 * | `llm-429` | a chat call answers 429 with `Retry-After: 1` |
 * | `llm-500` | a chat call answers 500 |
 * | `llm-stall` | a chat call generates for `stallMs` (default 2 × the claim's discard timeout, at least 1 s): in flight, so activity, as the real proxy counts it |
 */
import { z } from "zod";
import type { EmulatorHooks, FaultAction } from "./hooks.ts";
import type { Rng } from "./rng.ts";
import { ENGINE } from "../protocol/index.ts";

/** The fault kinds, by name. */
export const FaultKind = z.enum(["end-500-after-act", "end-drop-after-act", "end-drop-closing", "end-502-html", "claim-lost", "claim-500-after-act", "abort-500", "llm-429", "llm-500", "llm-stall"]);
export type FaultKind = z.infer<typeof FaultKind>;

/** One fault: its kind, the share of matching requests it hits, and a cap. */
export const FaultSpec = z.object({
  kind: FaultKind,
  rate: z.number().min(0).max(1).default(1),
  max: z.number().int().positive().optional(),
  /** for `llm-stall`: how long the call is held, milliseconds */
  stallMs: z.number().min(0).optional(),
  /** only an episode's first request of this kind (an end's resend is answered normally) */
  firstOnly: z.boolean().optional(),
  /** a time window: the fault hits only within this many ms of its first injection, ms */
  windowMs: z.number().positive().optional(),
});
export type FaultSpec = z.input<typeof FaultSpec>;

/**
 * Parses `KIND[:RATE[:MAX[:first|Ns]]]`, e.g. `end-500-after-act`, `llm-429:0.3`, `claim-lost:1:2`,
 * `end-500-after-act:1::first`, `end-502-html:1::30s`.
 * @throws Error naming the kind list, the bad number or the bad modifier
 */
export function parseFaultFlag(text: string): z.output<typeof FaultSpec> {
  const [kind = "", rate, max, modifier] = text.split(":");
  const windowS = modifier !== undefined && /^\d+(\.\d+)?s$/.test(modifier) ? Number(modifier.slice(0, -1)) : null;
  if (modifier !== undefined && modifier !== "first" && !(windowS !== null && windowS > 0)) {
    throw new Error(`--fault ${text}: the 4th field can only be 'first' or a time window in seconds such as '30s', got '${modifier}'`);
  }
  const k = FaultKind.safeParse(kind);
  if (!k.success) throw new Error(`--fault ${text}: unknown kind '${kind}'; use one of ${FaultKind.options.join(", ")}`);
  const r = rate === undefined || rate === "" ? 1 : Number(rate);
  if (!Number.isFinite(r) || r < 0 || r > 1) throw new Error(`--fault ${text}: rate must be a number from 0 to 1, got '${rate}'`);
  const m = max === undefined || max === "" ? undefined : Number(max);
  if (m !== undefined && (!Number.isInteger(m) || m < 1)) throw new Error(`--fault ${text}: max must be a positive integer, got '${max}'`);
  return { kind: k.data, rate: r, ...(m !== undefined ? { max: m } : {}), ...(modifier === "first" ? { firstOnly: true } : {}), ...(windowS !== null ? { windowMs: windowS * 1000 } : {}) };
}

/** The page a gateway in front of the server answers with when the server does not (`end-502-html`). */
const BAD_GATEWAY_PAGE = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n";

/** A fault as hooks see it, with its injection count. */
interface Armed {
  spec: z.output<typeof FaultSpec>;
  injected: number;
  /** when the first injection happened (epoch ms on the emulator's clock), for `windowMs` */
  firstAtMs: number | null;
  /** episodes whose request of this kind was already seen (`firstOnly`) */
  seen: Set<string>;
}

/** Which hook a kind lives on. */
const HOOK_OF: Record<FaultKind, "claimEpisode" | "endEpisode" | "abortEpisode" | "chatCompletion"> = {
  "end-500-after-act": "endEpisode",
  "end-drop-after-act": "endEpisode",
  "end-drop-closing": "endEpisode",
  "end-502-html": "endEpisode",
  "claim-lost": "claimEpisode",
  "claim-500-after-act": "claimEpisode",
  "abort-500": "abortEpisode",
  "llm-429": "chatCompletion",
  "llm-500": "chatCompletion",
  "llm-stall": "chatCompletion",
};

function actionOf(kind: FaultKind, stallMs: number): FaultAction {
  switch (kind) {
    case "end-500-after-act":
    case "claim-500-after-act":
      return { status: 500, afterHandling: true };
    case "end-drop-after-act":
    case "end-drop-closing":
    case "claim-lost":
      return { drop: true, afterHandling: true };
    case "abort-500":
      return { status: 500 };
    case "end-502-html":
      return { status: 502, body: BAD_GATEWAY_PAGE, headers: { "content-type": "text/html" } };
    case "llm-429":
      return { status: 429, body: { error: { message: "Rate limit reached; retry after 1 s", type: "rate_limit_error" } }, headers: { "retry-after": "1" } };
    case "llm-500":
      return { status: 500 };
    case "llm-stall":
      return { delayMs: stallMs }; // used as the generation latency (see faultHooks)
  }
}

/**
 * Hooks that inject `specs`, wrapping any hook already set (the wrapped hook still runs and wins when it returns an
 * action). `onInjected` is told each injection (the journal).
 * @param discardTimeoutMsOf the claim's discard timeout of a chat call's episode, ms (for `llm-stall`'s default)
 * @param nowMs the emulator's clock (epoch ms), for time windows
 * @param engineStatus the engine's status now (`end-drop-closing` compares it before and after the end)
 */
export function faultHooks(
  specs: readonly z.output<typeof FaultSpec>[],
  rng: Rng,
  base: EmulatorHooks,
  onInjected: (kind: FaultKind, path: string, episodeUuid?: string) => void,
  discardTimeoutMsOf: (episodeUuid: string) => number = () => 0,
  nowMs: () => number = () => Date.now(),
  engineStatus: () => string = () => "",
): EmulatorHooks {
  const armed: Armed[] = specs.map((spec) => ({ spec, injected: 0, firstAtMs: null, seen: new Set<string>() }));
  const pick = (hook: (typeof HOOK_OF)[FaultKind], episodeUuid?: string, stalls?: boolean): FaultAction | undefined => {
    for (const a of armed) {
      if (HOOK_OF[a.spec.kind] !== hook) continue;
      if (stalls !== undefined && (a.spec.kind === "llm-stall") !== stalls) continue;
      if (a.spec.firstOnly && episodeUuid !== undefined) {
        if (a.seen.has(episodeUuid)) continue;
        a.seen.add(episodeUuid);
      }
      if (a.spec.max !== undefined && a.injected >= a.spec.max) continue;
      if (a.spec.windowMs !== undefined && a.firstAtMs !== null && nowMs() - a.firstAtMs >= a.spec.windowMs) continue;
      if (a.spec.rate < 1 && rng.next() >= a.spec.rate) continue;
      const stall = a.spec.stallMs ?? Math.max(1_000, 2 * (episodeUuid ? discardTimeoutMsOf(episodeUuid) : 0));
      const inject = (): void => {
        a.injected++;
        a.firstAtMs ??= nowMs();
        onInjected(a.spec.kind, hook, episodeUuid);
      };
      if (a.spec.kind === "end-drop-closing") {
        // decided after the end was handled: only the end that moved the engine out of ROLLING loses its answer
        if (engineStatus() !== ENGINE.ROLLING) continue;
        const closing = (): boolean => {
          if (engineStatus() === ENGINE.ROLLING) return false;
          inject();
          return true;
        };
        return { ...actionOf(a.spec.kind, stall), onlyIf: closing };
      }
      inject();
      return actionOf(a.spec.kind, stall);
    }
    return undefined;
  };
  return {
    ...base,
    claimEpisode: (req) => base.claimEpisode?.(req) ?? pick("claimEpisode"),
    endEpisode: (req) => base.endEpisode?.(req) ?? pick("endEpisode", req.episode_uuid),
    abortEpisode: (req) => base.abortEpisode?.(req) ?? pick("abortEpisode", req.episode_uuid),
    chatCompletion: (call) => base.chatCompletion?.(call) ?? pick("chatCompletion", call.episodeUuid, false),
    // a stall is generation time: the call is in flight on the server, as a slow real engine's would be
    llmLatencyMs: (call) => pick("chatCompletion", call.episodeUuid, true)?.delayMs ?? (typeof base.llmLatencyMs === "function" ? base.llmLatencyMs(call) : base.llmLatencyMs),
  };
}
