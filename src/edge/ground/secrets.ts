/**
 * @module edge/ground/secrets — the operator's secrets (`AJET_SECRETS`, a JSON object of strings) and the rules for a
 * run's own `secrets`: a run can never shadow an operator secret (the operator's always win), every `…_URL` a run
 * names must be an allowed host, and every `{secret:NAME}` of a swarm's gateway headers must exist. Secret values
 * are never put in messages, logs or answers; only names are.
 */
import { headerSecretNames, resolveGatewayHeaders } from "../../protocol/index.ts";
import { checkUrl, type AllowedHosts } from "../../runtime/outbound.ts";
import type { Issue } from "./errors.ts";

/**
 * Parses `AJET_SECRETS`.
 * @returns the secrets (non-string values dropped) and a problem line when the var is not a JSON object of strings
 */
export function parseOperatorSecrets(raw: string | undefined): { secrets: Record<string, string>; problem: string | null } {
  if (!raw) return { secrets: {}, problem: null };
  try {
    const v = JSON.parse(raw) as unknown;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const secrets: Record<string, string> = Object.create(null) as Record<string, string>;
      for (const [k, x] of Object.entries(v)) if (typeof x === "string") secrets[k] = x;
      return { secrets: { ...secrets }, problem: null };
    }
  } catch {
    /* fall through */
  }
  return { secrets: {}, problem: "AJET_SECRETS is not a JSON object of strings; ignored" };
}

/** Run secrets and operator secrets for an episode: the operator's win on any name both define. */
export function mergeSecrets(runSecrets: Readonly<Record<string, string>>, operator: Readonly<Record<string, string>>): Record<string, string> {
  return { ...runSecrets, ...operator };
}

/** What a run spec's `secrets` and `swarms[].headers` are checked against. */
export interface RunSecretsCheck {
  runSecrets: Readonly<Record<string, string>>;
  operatorSecrets: Readonly<Record<string, string>>;
  swarms: ReadonlyArray<{ headers?: Readonly<Record<string, string>> | undefined }>;
  allowed: AllowedHosts;
}

/**
 * The problems with a run's secrets: a key the operator already sets (shadowing), a `…_URL` value whose host is
 * not allowed, a gateway header naming a secret nobody sets.
 * @returns one issue per problem, naming the key (never a value)
 */
export function runSecretsIssues(c: RunSecretsCheck): Issue[] {
  const issues: Issue[] = [];
  for (const [key, value] of Object.entries(c.runSecrets)) {
    if (Object.hasOwn(c.operatorSecrets, key)) {
      issues.push({ code: "invalid", path: `secrets.${key}`, message: `${key} is set by the Worker's operator (AJET_SECRETS) and a run cannot replace it; remove it from the run's secrets, or use another name` });
      continue;
    }
    if (/_URL$/.test(key) && /^[a-z][a-z0-9+.-]*:/i.test(value.trim())) {
      const refused = checkUrl(value.trim(), c.allowed);
      if (refused) issues.push({ code: "invalid", path: `secrets.${key}`, message: `${key}: ${refused.message}` });
    }
  }
  c.swarms.forEach((s, i) => {
    for (const [header, template] of Object.entries(s.headers ?? {})) {
      for (const name of headerSecretNames(template)) {
        if (!Object.hasOwn(c.runSecrets, name) && !Object.hasOwn(c.operatorSecrets, name)) {
          issues.push({ code: "invalid", path: `swarms.${i}.headers.${header}`, message: `header ${header} takes {secret:${name}}, but neither the run's secrets nor the operator's AJET_SECRETS set ${name}` });
        }
      }
    }
  });
  return issues;
}

/**
 * The resolved gateway headers of a run's swarms, per swarm name, from the run's and the operator's secrets (the
 * operator's win). Swarms without templates are left out; one whose templates need a secret nobody sets is left out
 * and reported through `missing(swarm, names)`.
 * @param operatorSecrets the Worker's `AJET_SECRETS` text (unparseable: no operator secrets)
 */
export function runGatewayHeaders(
  run: { swarms: readonly { name: string; headers?: Readonly<Record<string, string>> | undefined }[]; secrets: Readonly<Record<string, string>> },
  operatorSecrets: string | undefined,
  missing: (swarm: string, names: string[]) => void,
): Record<string, Record<string, string>> {
  const secrets = mergeSecrets(run.secrets, parseOperatorSecrets(operatorSecrets).secrets);
  const out: Record<string, Record<string, string>> = {};
  for (const s of run.swarms) {
    if (!s.headers) continue;
    const resolved = resolveGatewayHeaders(s.headers, secrets);
    if ("headers" in resolved) out[s.name] = resolved.headers;
    else missing(s.name, resolved.missing);
  }
  return out;
}
