/**
 * @module test/security/_support — helpers of the security suite (edge project, inside workerd): call the Worker
 * with its vars changed (a deployed Worker without tokens, with another allow-list, smaller limits), and collect
 * every console line a block of code writes, to grep them for secret values.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/edge/index.ts";
import type { Env } from "../../src/edge/ground/env.ts";

/** The edge pool's tokens (vitest.config.ts). */
export const API_TOKEN = env.AJET_API_TOKEN!;
export const READ_TOKEN = env.AJET_READ_TOKEN!;

/** Calls the Worker's fetch handler with `overrides` on top of the pool's env (undefined removes a var). */
export async function callWorker(path: string, init: RequestInit = {}, overrides: Partial<Record<keyof Env, string | undefined>> = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`https://edge.test${path}`, init), { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** `Authorization: Bearer <token>` plus JSON content type. */
export function bearer(token: string = API_TOKEN): Record<string, string> {
  return { authorization: `Bearer ${token}`, "content-type": "application/json" };
}

/** Runs `fn` and returns every line it wrote with console.log / info / warn / error / debug. */
export async function consoleLines<T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const lines: string[] = [];
  const methods = ["log", "info", "warn", "error", "debug"] as const;
  const originals = methods.map((m) => console[m]);
  methods.forEach((m, i) => {
    console[m] = (...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
      (originals[i] as (...a: unknown[]) => void)(...args);
    };
  });
  try {
    return { result: await fn(), lines };
  } finally {
    methods.forEach((m, i) => (console[m] = originals[i] as never));
  }
}
