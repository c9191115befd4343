/**
 * @module protocol/gateway-headers — headers a run sends on every call to one swarm server, so the server can sit
 * behind an access gateway (Cloudflare Access service tokens, a bearer-token proxy). A run spec names them per
 * swarm as templates whose secret parts come from secrets, never literal credentials:
 *
 * ```json
 * {"url": "https://gpu.example.com", "headers": {"CF-Access-Client-Id": "{secret:CF_ACCESS_ID}",
 *                                                 "CF-Access-Client-Secret": "{secret:CF_ACCESS_SECRET}",
 *                                                 "X-Gateway-Token": "Bearer {secret:GATEWAY_TOKEN}"}}
 * ```
 *
 * Every value holds at least one `{secret:NAME}`; the NAME is looked up in the run's secrets and the operator's
 * `AJET_SECRETS`. `Authorization` cannot be one of them: the episode's LLM calls use it for the per-episode
 * `sk-ajet-` key (spec §9.2), so a gateway must read another header. Platform-free.
 */
import * as z from "zod/mini";
import "./zod-locale.ts"; // zod's English messages for these schemas

/** `{secret:NAME}` inside a header template. */
const SECRET_REF = /\{secret:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Header names a run may not set: the LLM key's header, and headers the fetch or the protocol owns. */
export const RESERVED_GATEWAY_HEADERS = ["authorization", "x-api-key", "host", "content-type", "content-length", "connection", "transfer-encoding", "cookie", "accept"];

/** A header template map (name → template), validated: token names, no reserved name, each value refers to a secret. */
export const GatewayHeaders = z
  .record(
    z.string().check(z.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, { error: "a header name uses letters, digits and - only, e.g. CF-Access-Client-Id" })),
    z
      .string({ error: "a header value is a string template, e.g. \"{secret:GATEWAY_TOKEN}\"" })
      .check(
        z.maxLength(1024, { error: "a header template is at most 1024 characters" }),
        z.regex(/^[\x20-\x7e]*$/, { error: "a header template holds printable ASCII only (no line breaks)" }),
        z.refine((v: string) => headerSecretNames(v).length > 0, { error: 'a header value must take its credential from a secret: "{secret:NAME}" (e.g. "Bearer {secret:GATEWAY_TOKEN}"); literal credentials are refused' }),
      ),
  )
  .check(z.superRefine((headers: Record<string, string>, ctx) => {
    for (const name of Object.keys(headers)) {
      if (RESERVED_GATEWAY_HEADERS.includes(name.toLowerCase())) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message:
            name.toLowerCase() === "authorization" || name.toLowerCase() === "x-api-key"
              ? `${name} carries each episode's own LLM key (sk-ajet-…) on the swarm's LLM proxy; let the gateway check another header (e.g. X-Gateway-Token, or Cloudflare Access's CF-Access-Client-Id / CF-Access-Client-Secret)`
              : `${name} is set by the client itself; choose another header name`,
        });
      }
    }
  }));
export type GatewayHeaders = z.infer<typeof GatewayHeaders>;

/** The secret names one template (or every template of a map) refers to, in order, without repeats. */
export function headerSecretNames(template: string | Readonly<Record<string, string>>): string[] {
  const values = typeof template === "string" ? [template] : Object.values(template);
  const names = values.flatMap((v) => [...v.matchAll(SECRET_REF)].map((m) => m[1]!));
  return [...new Set(names)];
}

/**
 * Fills the templates from `secrets`.
 * @returns the header values, or the secret names that are missing (then nothing is resolved)
 */
export function resolveGatewayHeaders(templates: Readonly<Record<string, string>>, secrets: Readonly<Record<string, string>>): { headers: Record<string, string> } | { missing: string[] } {
  const missing = headerSecretNames(templates).filter((n) => !Object.hasOwn(secrets, n));
  if (missing.length) return { missing };
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates)) {
    const value = template.replace(SECRET_REF, (_, n: string) => secrets[n]!);
    // a secret with a line break would split the header: refuse it rather than send something else
    if (/[\r\n]/.test(value)) return { missing: headerSecretNames(template) };
    headers[name] = value;
  }
  return { headers };
}
