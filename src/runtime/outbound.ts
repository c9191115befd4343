/**
 * @module runtime/outbound — where the Worker may connect, and which credential may go where. Platform-free
 * (workerd and Node).
 *
 * - **Allowed hosts** ({@link parseAllowedHosts}): the operator's `AJET_ALLOWED_HOSTS`, comma-separated `host` or
 *   `host:port` entries (`*.example.com` matches subdomains). A URL whose host is not listed is refused. Loopback,
 *   private, link-local and other non-public addresses (`127.0.0.1`, `localhost`, `10.x`, `169.254.x`, `::1`,
 *   `fe80::`, …) match only an entry that names them exactly, never a wildcard. Unset or empty: nothing allowed.
 * - **Credential bindings** ({@link credentialBindings}): an operator secret whose name looks like a credential
 *   (`…KEY…`, `…TOKEN…`, `…SECRET…`, `…PASSWORD…`, `…AUTH…`, `…CLIENT_ID…`) is bound to the host of the operator
 *   secret `<PREFIX>_BASE_URL` or `<PREFIX>_URL` of the longest matching prefix (`JUDGE_API_KEY` ↔
 *   `JUDGE_BASE_URL`). A request that carries a bound credential (in its URL, headers or string body) to any other
 *   host is refused before it is sent; a credential with no such URL is never sent anywhere.
 * - {@link outboundFetch} applies both to every request of a fetch, redirects included (followed by hand, each hop
 *   checked).
 */

/** One allowed host entry: a host (lowercase, IPv6 without brackets), an optional port, or a `*.suffix` wildcard. */
export interface HostEntry {
  host: string;
  port: number | null;
  wildcard: boolean;
}

/** The operator's allow-list; `setting` names where it comes from (for messages). */
export interface AllowedHosts {
  entries: readonly HostEntry[];
  /** e.g. `AJET_ALLOWED_HOSTS` */
  setting: string;
}

/** Why a URL is refused: the host as written and a message naming it and the setting to change. */
export interface HostRefusal {
  host: string;
  message: string;
}

/** Thrown by {@link outboundFetch} for a refused request; `retryable: false` stops retry loops at once. */
export class OutboundRefusedError extends Error {
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = "OutboundRefusedError";
  }
}

/** The name of the allow-list var. */
export const ALLOWED_HOSTS_SETTING = "AJET_ALLOWED_HOSTS";

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/**
 * Parses `AJET_ALLOWED_HOSTS`. Entries are trimmed and lowercased; empty entries are skipped.
 * @returns the entries and the problems (entries that are not `host` or `host:port`, e.g. a URL or `*`)
 */
export function parseAllowedHosts(raw: string | undefined, setting = ALLOWED_HOSTS_SETTING): { allowed: AllowedHosts; problems: string[] } {
  const entries: HostEntry[] = [];
  const problems: string[] = [];
  for (const part of (raw ?? "").split(",")) {
    const text = part.trim().toLowerCase();
    if (!text) continue;
    const wildcard = text.startsWith("*.");
    let parsed: URL | null = null;
    try {
      parsed = text.includes("/") || text === "*" ? null : new URL(`http://${wildcard ? text.slice(2) : text}`);
    } catch {
      parsed = null;
    }
    if (parsed?.pathname !== "/" || parsed.username || parsed.password) {
      problems.push(`${setting} entry "${part.trim()}" is not a host or host:port (e.g. "gpu.example.com" or "10.0.0.5:10086")`);
      continue;
    }
    entries.push({ host: stripBrackets(parsed.hostname), port: parsed.port ? Number(parsed.port) : null, wildcard });
  }
  return { allowed: { entries, setting }, problems };
}

function ipv4Parts(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m ? m.slice(1).map(Number) : null;
}

/**
 * True for hosts that are not public internet addresses: `localhost` (and `*.localhost`), IPv4 loopback, private,
 * link-local, CGNAT, "this network" and multicast/reserved ranges; IPv6 loopback, unspecified, unique-local,
 * link-local, and IPv4-mapped forms of those. Hostnames (other than localhost) are not resolved here.
 * @param host a URL's `hostname` (IPv6 with or without brackets)
 */
export function isNonPublicHost(host: string): boolean {
  const h = stripBrackets(host.toLowerCase()).replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const v4 = ipv4Parts(h);
  if (v4) {
    const [a, b] = v4 as [number, number, number, number];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || a >= 224;
  }
  if (h.includes(":")) {
    if (h === "::" || h === "::1") return true;
    const mapped = /^::ffff:(.+)$/.exec(h);
    if (mapped) {
      const tail = mapped[1]!;
      if (ipv4Parts(tail)) return isNonPublicHost(tail);
      const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(tail);
      if (hex) {
        const n = (parseInt(hex[1]!, 16) << 16) | parseInt(hex[2]!, 16);
        return isNonPublicHost(`${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`);
      }
      return true;
    }
    const first = parseInt(h.split(":")[0] || "0", 16);
    return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00;
  }
  return false;
}

function defaultPort(protocol: string): number {
  return protocol === "https:" ? 443 : 80;
}

/**
 * Checks one URL against the allow-list.
 * @returns null when allowed, else a {@link HostRefusal} naming the host and the setting to change
 */
export function checkUrl(url: string | URL, allowed: AllowedHosts): HostRefusal | null {
  let u: URL;
  try {
    u = typeof url === "string" ? new URL(url) : url;
  } catch {
    return { host: String(url), message: `"${String(url)}" is not a URL` };
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return { host: u.host, message: `${u.protocol} URLs are not allowed; use http(s)` };
  if (u.username || u.password) return { host: u.host, message: `a URL with credentials in it (user:password@) is refused; put credentials in secrets and headers` };
  const host = stripBrackets(u.hostname);
  const port = u.port ? Number(u.port) : defaultPort(u.protocol);
  const nonPublic = isNonPublicHost(host);
  const match = allowed.entries.some((e) => {
    if (e.port !== null && e.port !== port) return false;
    if (e.wildcard) return !nonPublic && host.endsWith(`.${e.host}`);
    return e.host === host;
  });
  if (match) return null;
  const shown = u.port ? `${u.hostname}:${u.port}` : u.hostname;
  const what = nonPublic ? `${shown} is a loopback, private or link-local address, which is refused unless listed exactly` : `${shown} is not an allowed host`;
  const list = allowed.entries.length ? `allowed: ${allowed.entries.map((e) => `${e.wildcard ? "*." : ""}${e.host.includes(":") ? `[${e.host}]` : e.host}${e.port ? `:${e.port}` : ""}`).join(", ")}` : "no outbound host is allowed yet";
  return { host: shown, message: `${what} (${list}); the operator adds "${shown}" to ${allowed.setting} (wrangler.toml [vars] or .dev.vars)` };
}

/** An operator credential and the host it may be sent to (null: none configured, never sent). */
export interface CredentialBinding {
  /** the secret's name, e.g. `JUDGE_API_KEY` (messages name it, never its value) */
  name: string;
  value: string;
  /** `host[:port]` of its endpoint as `URL.host` writes it, or null */
  host: string | null;
  /** the secret that names the endpoint, e.g. `JUDGE_BASE_URL` */
  endpointSecret: string | null;
}

/** Secret names treated as credentials (bound to their endpoint). */
const CREDENTIAL_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL|CLIENT_ID|COOKIE)/i;
/** Values shorter than this are not scanned for (too likely to occur by chance); credentials are longer. */
export const MIN_SCANNED_SECRET_LENGTH = 8;

/**
 * The operator credentials of `secrets` (`AJET_SECRETS`) with the host each is bound to (see the module doc).
 * @returns one binding per credential-like secret of at least {@link MIN_SCANNED_SECRET_LENGTH} characters
 */
export function credentialBindings(secrets: Readonly<Record<string, string>>): CredentialBinding[] {
  const endpoints = new Map<string, { secret: string; host: string | null }>();
  for (const [name, value] of Object.entries(secrets)) {
    const m = /^(.+?)_(BASE_URL|URL)$/.exec(name);
    if (!m) continue;
    let host: string | null = null;
    try {
      host = new URL(value.trim()).host;
    } catch {
      host = null;
    }
    if (!endpoints.has(m[1]!) || m[2] === "BASE_URL") endpoints.set(m[1]!, { secret: name, host });
  }
  const bindings: CredentialBinding[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    if (/_(BASE_URL|URL)$/.test(name) || !CREDENTIAL_NAME.test(name) || value.length < MIN_SCANNED_SECRET_LENGTH) continue;
    let best: { prefix: string; secret: string; host: string | null } | null = null;
    for (const [prefix, ep] of endpoints) {
      if (name.startsWith(`${prefix}_`) && (!best || prefix.length > best.prefix.length)) best = { prefix, ...ep };
    }
    bindings.push({ name, value, host: best?.host ?? null, endpointSecret: best?.secret ?? null });
  }
  return bindings;
}

/** The request's URL, header values and string body, for the credential scan. */
function requestTexts(url: string, init: RequestInit | undefined, request: Request | null): string[] {
  const texts = [url];
  const headers = new Headers(request?.headers);
  if (init?.headers) new Headers(init.headers).forEach((v, k) => headers.set(k, v));
  headers.forEach((v) => texts.push(v));
  const body = init?.body;
  if (typeof body === "string") texts.push(body);
  else if (body instanceof URLSearchParams) texts.push(body.toString());
  else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) texts.push(new TextDecoder().decode(body as ArrayBuffer));
  return texts;
}

/**
 * Checks that no bound credential goes to another host than its own.
 * @returns null when fine, else the message (naming the secret and the host, never the value)
 */
export function checkCredentials(url: URL, texts: readonly string[], bindings: readonly CredentialBinding[]): string | null {
  for (const b of bindings) {
    if (b.host !== null && b.host === url.host) continue;
    if (!texts.some((t) => t.includes(b.value))) continue;
    return b.host === null
      ? `the operator secret ${b.name} may not be sent to ${url.host}: no endpoint is configured for it (the operator sets ${b.name.replace(/_[^_]+$/, "")}_BASE_URL or _URL in AJET_SECRETS)`
      : `the operator secret ${b.name} may only be sent to ${b.host} (${b.endpointSecret}), not to ${url.host}`;
  }
  return null;
}

/** The fetch signature guarded here. */
export type OutboundFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What {@link outboundFetch} enforces. */
export interface OutboundPolicy {
  allowed: AllowedHosts;
  bindings: readonly CredentialBinding[];
}

/** Redirect hops followed (each checked) before the response is returned as it is. */
export const MAX_REDIRECTS = 5;

/**
 * Wraps `inner` so every request (and every redirect hop of a GET/HEAD; other methods get the 3xx as it is) goes
 * only to an allowed host and carries no operator credential to a host it is not bound to.
 * @throws OutboundRefusedError before anything is sent to a refused host
 */
export function outboundFetch(inner: OutboundFetch, policy: OutboundPolicy): OutboundFetch {
  const check = (url: URL, texts: readonly string[]) => {
    const refused = checkUrl(url, policy.allowed);
    if (refused) throw new OutboundRefusedError(`outbound request refused: ${refused.message}`);
    const leak = checkCredentials(url, texts, policy.bindings);
    if (leak) throw new OutboundRefusedError(`outbound request refused: ${leak}`);
  };
  return async (input, init) => {
    const request = input instanceof Request ? input : null;
    let url = new URL(request ? request.url : String(input));
    const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
    check(url, requestTexts(url.href, init, request));
    let res = await inner(input, { ...init, redirect: "manual" });
    for (let hop = 0; hop < MAX_REDIRECTS && (method === "GET" || method === "HEAD"); hop++) {
      const location = res.status >= 300 && res.status < 400 ? res.headers.get("location") : null;
      if (!location) break;
      await res.body?.cancel();
      url = new URL(location, url);
      // a redirect to another host drops the headers (as browsers drop Authorization), so nothing leaks there
      const sameHost = url.host === new URL(request ? request.url : String(input)).host;
      const headers = sameHost ? new Headers(init?.headers ?? request?.headers) : new Headers();
      check(url, [url.href, ...[...headers.values()]]);
      res = await inner(url.href, { method, headers, redirect: "manual", ...(init?.signal ? { signal: init.signal } : {}) });
    }
    return res;
  };
}

/**
 * The policy from the Worker's vars: `AJET_ALLOWED_HOSTS`, plus the endpoints the operator configured in
 * `AJET_SECRETS` (the host:port of every `…_URL` secret: the operator chose them), and the credential bindings.
 */
export function outboundPolicy(allowedHostsVar: string | undefined, operatorSecrets: Readonly<Record<string, string>>): OutboundPolicy {
  const { allowed } = parseAllowedHosts(allowedHostsVar);
  const operatorEndpoints: HostEntry[] = [];
  for (const [name, value] of Object.entries(operatorSecrets)) {
    if (!/_URL$/.test(name)) continue;
    try {
      const u = new URL(value.trim());
      operatorEndpoints.push({ host: stripBrackets(u.hostname), port: u.port ? Number(u.port) : defaultPort(u.protocol), wildcard: false });
    } catch {
      // not a URL: nothing to allow
    }
  }
  return { allowed: { ...allowed, entries: [...allowed.entries, ...operatorEndpoints] }, bindings: credentialBindings(operatorSecrets) };
}
