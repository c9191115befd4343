/**
 * @module edge/api/auth — who may call the Worker's API. One function, {@link authorize}, decides every request from
 * its credentials and the Worker's secrets: `AJET_API_TOKEN` (read and write) and the optional `AJET_READ_TOKEN`
 * (GET routes only). Tokens are compared in constant time (both sides hashed with SHA-256, then every byte
 * compared). A Worker without `AJET_API_TOKEN` refuses everything (fails closed). Credential *sources* are kept
 * apart from the decision: today the `Authorization: Bearer` header; a dashboard can add a signed-cookie source
 * by passing its own {@link Credential} to {@link authorizeCredential}.
 */

import type { AuthEnv } from "../ground/env.ts";
import type { IssueCode } from "../ground/errors.ts";
import { placeholderTokenReason } from "../../util/placeholder-token.ts";

export type { AuthEnv };

/** What a caller may do: `write` (create and stop runs, read) or `read` (GET routes only). */
export type Access = "write" | "read";


/** A granted request: its access and a stable, non-secret id of the token (for per-token limits). */
export interface Granted {
  ok: true;
  access: Access;
  /** `write:` or `read:` + the first 16 hex digits of the token's SHA-256; never the token */
  principal: string;
}

/**
 * A refused request: why (`invalid`: a credential in the query; `unauthenticated`: none or a wrong one; `forbidden`:
 * the read token on a route that writes; `unconfigured`: the Worker has no usable token), the header at fault and a
 * message that says the fix. The API answers with the code's status (edge/ground/errors `ISSUE_STATUS`).
 */
export interface Refused {
  ok: false;
  code: Extract<IssueCode, "invalid" | "unauthenticated" | "forbidden" | "unconfigured">;
  /** the header (or query parameter) the refusal is about, e.g. `authorization` */
  header: string;
  message: string;
}

/** The outcome of {@link authorize}. */
export type AuthDecision = Granted | Refused;

/** A credential read from a request by one source: the presented token, or why none could be read. */
export type Credential = { token: string; source: string } | { token: null; source: string; problem: "missing" | "malformed" };

/** The shortest `AJET_API_TOKEN` / `AJET_READ_TOKEN` accepted (shorter ones are refused: fail closed). */
export const MIN_TOKEN_LENGTH = 16;

/** Query parameters that look like a credential; a request carrying one is refused (URLs end up in logs). */
const TOKEN_QUERY_PARAMS = ["token", "access_token", "api_token", "api_key", "apikey", "key", "auth", "authorization", "bearer", "password", "secret"];

/** How to set the token, for the 503 when it is missing. */
export const SET_TOKEN_HINT =
  "the Worker has no AJET_API_TOKEN: set it with `npx wrangler secret put AJET_API_TOKEN` (or in .dev.vars for `wrangler dev`)";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Compares two strings in time independent of where they differ and of their lengths (both are hashed first).
 * @returns true when equal
 */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([sha256(a), sha256(b)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

async function principalOf(access: Access, token: string): Promise<string> {
  const digest = await sha256(token);
  return `${access}:${[...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The bearer token of the `Authorization` header, or why there is none. */
export function bearerCredential(request: Request): Credential {
  const header = request.headers.get("authorization");
  if (header === null || header.trim() === "") return { token: null, source: "authorization", problem: "missing" };
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? { token: match[1]!, source: "authorization" } : { token: null, source: "authorization", problem: "malformed" };
}

/**
 * The credential of the dashboard's session cookie (set by `POST /login`; the app reads it with hono's `getCookie`),
 * or why there is none. The cookie is SameSite=Strict, so another site's page cannot make a browser send it (no
 * cross-site request forgery).
 * @param value the cookie's value, decoded (undefined when the request has none)
 */
export function cookieCredential(value: string | undefined): Credential {
  return value === undefined || value === "" ? { token: null, source: "cookie", problem: "missing" } : { token: value, source: "cookie" };
}

/** True for the methods a read-only token may use. */
export function isReadMethod(method: string): boolean {
  return method === "GET" || method === "HEAD";
}

/**
 * Decides a credential (from any source) for a request of `method`.
 * @returns {@link Granted} or {@link Refused}: `unconfigured` when the Worker has no usable `AJET_API_TOKEN` (unset,
 *   too short, or a placeholder such as `.dev.vars.example`'s),
 *   `unauthenticated` for a missing, malformed or wrong token, `forbidden` for the read token on a route that writes
 */
export async function authorizeCredential(credential: Credential, method: string, env: AuthEnv): Promise<AuthDecision> {
  const writeToken = env.AJET_API_TOKEN ?? "";
  const readToken = env.AJET_READ_TOKEN ?? "";
  const placeholder = placeholderTokenReason(writeToken);
  if (writeToken.length < MIN_TOKEN_LENGTH || placeholder) {
    const message = writeToken === ""
      ? SET_TOKEN_HINT
      : writeToken.length < MIN_TOKEN_LENGTH
        ? `AJET_API_TOKEN is shorter than ${MIN_TOKEN_LENGTH} characters: set a longer random one (e.g. \`openssl rand -hex 32\`) with \`npx wrangler secret put AJET_API_TOKEN\``
        : `AJET_API_TOKEN is not a real token (${placeholder}): set a random one (e.g. \`openssl rand -hex 32\`) with \`npx wrangler secret put AJET_API_TOKEN\` (or in .dev.vars for wrangler dev)`;
    return { ok: false, code: "unconfigured", header: "AJET_API_TOKEN", message };
  }
  const header = credential.source;
  if (credential.token === null) {
    return credential.problem === "missing"
      ? { ok: false, code: "unauthenticated", header, message: `missing ${header} header: send \`Authorization: Bearer <AJET_API_TOKEN>\`` }
      : { ok: false, code: "unauthenticated", header, message: `malformed ${header} header: expected \`Authorization: Bearer <token>\`` };
  }
  // both comparisons always run, so the time does not tell which token (if any) matched
  const [isWrite, isRead] = await Promise.all([
    constantTimeEqual(credential.token, writeToken),
    // a read token that is a placeholder opens nothing (fails closed, as one that is too short)
    readToken.length >= MIN_TOKEN_LENGTH && !placeholderTokenReason(readToken) ? constantTimeEqual(credential.token, readToken) : Promise.resolve(false),
  ]);
  if (isWrite) return { ok: true, access: "write", principal: await principalOf("write", credential.token) };
  if (isRead) {
    if (isReadMethod(method)) return { ok: true, access: "read", principal: await principalOf("read", credential.token) };
    return { ok: false, code: "forbidden", header, message: `the ${header} header carries the read-only token (AJET_READ_TOKEN): it may only GET; use AJET_API_TOKEN to ${method} here` };
  }
  return { ok: false, code: "unauthenticated", header, message: `wrong token in the ${header} header: it matches neither AJET_API_TOKEN nor AJET_READ_TOKEN` };
}

/**
 * Decides one API request: refuses a credential in the query string (`invalid`), then checks the bearer token, or, when
 * the request has no Authorization header, the dashboard's session cookie ({@link cookieCredential}).
 * @param sessionCookie the value of the dashboard's session cookie (`getCookie(c, SESSION_COOKIE)`), if any
 * @returns {@link Granted} with the caller's access, or {@link Refused} with its code and a message naming the header
 */
export async function authorize(request: Request, env: AuthEnv, sessionCookie?: string): Promise<AuthDecision> {
  const url = new URL(request.url);
  for (const name of url.searchParams.keys()) {
    if (TOKEN_QUERY_PARAMS.includes(name.toLowerCase())) {
      return { ok: false, code: "invalid", header: name, message: `a credential in the query string (?${name}=…) is refused: URLs are logged; send \`Authorization: Bearer <token>\` instead` };
    }
  }
  // the Authorization header wins; a browser without one may carry the dashboard's session cookie
  const bearer = bearerCredential(request);
  if (bearer.token === null && bearer.problem === "missing") {
    const cookie = cookieCredential(sessionCookie);
    if (cookie.token !== null) return authorizeCredential(cookie, request.method, env);
  }
  return authorizeCredential(bearer, request.method, env);
}
