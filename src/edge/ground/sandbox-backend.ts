/**
 * @module edge/ground/sandbox-backend — the Worker's sandbox backend, from its vars (docs/design/sandboxes.md):
 * - the local sandbox server: `AJET_SANDBOX_URL` and `AJET_SANDBOX_TOKEN` (`ajet-edge dev` sets both); the token
 *   goes to that URL only, through the invocation's outbound rules;
 * - Cloudflare's Sandbox SDK: `AJET_SANDBOX_CLASSES`, a JSON object from instance type (or `"type/image"`) to the
 *   name of a Durable Object binding of a Sandbox container class, with the SDK's `getSandbox` registered by the
 *   containers entry (`src/edge/index-containers.ts`), so a Worker without containers bundles nothing of the SDK.
 * Used by the consumer (the attempt's sandbox) and the run object (its sweep).
 */
import { cloudflareSandboxBackend, type GetSandbox } from "../../sandbox/cloudflare-backend.ts";
import { localSandboxBackend } from "../../sandbox/local-backend.ts";
import type { SandboxBackend } from "../../sandbox/backend.ts";
import type { FetchLike } from "../../runtime/limits.ts";
import { bindingNamed, type Env } from "./env.ts";

/** `getSandbox` of `@cloudflare/sandbox`, once the containers entry registered it. */
let getSandbox: GetSandbox<unknown> | null = null;

/** Called by the containers entry: this Worker may run sandboxes on Cloudflare's Sandbox SDK. */
export function registerCloudflareSandbox(fn: GetSandbox<never>): void {
  getSandbox = fn as GetSandbox<unknown>;
}

/** The backend and why there is none: a line naming the vars to set. */
export interface WorkerSandboxBackend {
  backend: SandboxBackend | null;
  missing?: string;
}

const NONE =
  "the run has sandboxes, but this Worker has no sandbox backend: set AJET_SANDBOX_URL and AJET_SANDBOX_TOKEN (a local sandbox server: ajet-edge sandbox-server), " +
  "or AJET_SANDBOX_CLASSES with the Sandbox container bindings (Cloudflare, deployed with src/edge/index-containers.ts)";

/**
 * This Worker's sandbox backend.
 * @param o.fetch the invocation's outbound fetch (guarded: allowed hosts, the connection limiter, the budget)
 * @param o.take charges one subrequest per Sandbox SDK call (its calls are Durable Object RPCs, not fetches)
 */
export function workerSandboxBackend(env: Env, o: { fetch: FetchLike; take?(purpose: string): void }): WorkerSandboxBackend {
  if (env.AJET_SANDBOX_CLASSES) {
    let classes: unknown;
    try {
      classes = JSON.parse(env.AJET_SANDBOX_CLASSES);
    } catch {
      return { backend: null, missing: "AJET_SANDBOX_CLASSES is not JSON; give an object such as {\"lite\": \"SANDBOX\"}" };
    }
    if (!getSandbox) return { backend: null, missing: "AJET_SANDBOX_CLASSES is set, but this Worker was not built from src/edge/index-containers.ts (which registers the Sandbox SDK)" };
    const bindings: Record<string, unknown> = {};
    for (const [key, name] of Object.entries((classes ?? {}) as Record<string, unknown>)) {
      const ns = typeof name === "string" ? bindingNamed(env, name) : undefined;
      if (!ns) return { backend: null, missing: `AJET_SANDBOX_CLASSES.${key} names ${JSON.stringify(name)}, which is no binding of this Worker; bind the Sandbox Durable Object under that name in wrangler.toml` };
      bindings[key] = ns;
    }
    return { backend: cloudflareSandboxBackend({ getSandbox, bindings, ...(o.take ? { take: o.take } : {}) }) };
  }
  if (env.AJET_SANDBOX_URL || env.AJET_SANDBOX_TOKEN) {
    if (!env.AJET_SANDBOX_URL || !/^https?:\/\//.test(env.AJET_SANDBOX_URL)) return { backend: null, missing: "AJET_SANDBOX_URL must be the sandbox server's http(s) URL, e.g. http://127.0.0.1:40123" };
    if (!env.AJET_SANDBOX_TOKEN || env.AJET_SANDBOX_TOKEN.length < 16) return { backend: null, missing: "AJET_SANDBOX_TOKEN must be the sandbox server's token (16 characters or more)" };
    return { backend: localSandboxBackend({ url: env.AJET_SANDBOX_URL, token: env.AJET_SANDBOX_TOKEN, fetch: o.fetch }) };
  }
  return { backend: null, missing: NONE };
}
