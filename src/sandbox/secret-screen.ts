/**
 * @module sandbox/secret-screen — secrets never enter a sandbox unless the run names them for it: every text sent
 * in (a command, code, an env value, a file's content) is searched for the values of the secrets the run's
 * `sandbox.secrets` does not name, the judge's key and the episode keys; a hit refuses the call with one line
 * naming the secret (never its value). Values shorter than {@link MIN_SCREENED_CHARS} are not searched (they would
 * match ordinary text); such a value is no secret worth the name.
 */
import { SandboxError } from "./types.ts";

/** Secret values shorter than this are not searched for. */
export const MIN_SCREENED_CHARS = 6;

/** Secrets that never enter a sandbox, even when `sandbox.secrets` names them. */
export const NEVER_IN_SANDBOX: readonly string[] = ["JUDGE_API_KEY"];

/** The screen of one attempt. */
export interface SecretScreen {
  /** @throws SandboxError `secret` when `text` holds a forbidden value */
  check(where: string, text: string): void;
  /** {@link SecretScreen.check} on each value of `env` (and refuses non-string values) */
  checkAll(where: string, env: Readonly<Record<string, string>> | undefined): void;
}

/**
 * The screen for a run's secrets.
 * @param secrets every secret the attempt holds (the run's and the operator's), by name
 * @param allowed the names the run's `sandbox.secrets` lets in
 * @param extra other values that never go in (the episode keys), with the name to show for them
 */
export function secretScreen(secrets: Readonly<Record<string, string>>, allowed: readonly string[], extra: ReadonlyArray<{ name: string; value: string }> = []): SecretScreen {
  const forbidden = [
    ...Object.entries(secrets)
      .filter(([name]) => !allowed.includes(name) || NEVER_IN_SANDBOX.includes(name))
      .map(([name, value]) => ({ name, value })),
    ...extra,
  ].filter((s) => typeof s.value === "string" && s.value.length >= MIN_SCREENED_CHARS);
  const check = (where: string, text: string) => {
    for (const s of forbidden) {
      if (text.includes(s.value)) {
        const how = NEVER_IN_SANDBOX.includes(s.name)
          ? `${s.name} never enters a sandbox`
          : s.name.startsWith("episode key")
            ? "an episode's LLM key never enters a sandbox (call the model from the function, not from the sandbox)"
            : `add "${s.name}" to the run spec's sandbox.secrets to let it in`;
        throw new SandboxError("secret", `${where}: holds the value of the secret ${s.name}, which this run does not let into its sandboxes; ${how}`);
      }
    }
  };
  return {
    check,
    checkAll(where, env) {
      if (env === undefined) return;
      for (const [k, v] of Object.entries(env)) {
        if (typeof v !== "string") throw new SandboxError("config", `${where}.${k} must be a string, got ${typeof v}`);
        check(`${where}.${k}`, v);
      }
    },
  };
}
