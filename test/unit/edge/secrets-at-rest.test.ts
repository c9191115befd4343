/**
 * Secrets at rest (edge/ground/secrets-at-rest): a run's secrets round-trip under the operator key; the stored form
 * holds no plaintext byte; another operator key, another run or an altered byte does not decrypt (each a
 * SecretsKeyError naming AJET_SECRETS_KEY or the run, never a value); a missing or short key refuses to seal.
 */
import { describe, expect, it } from "vitest";
import { sealSecrets, secretsKeyProblem, SecretsKeyError, unsealSecrets } from "../../../src/edge/ground/secrets-at-rest.ts";

const KEY = "0123456789abcdef0123456789abcdef-operator";
const SECRETS = { MY_API_KEY: "sk-plaintext-secret-0001", GATEWAY_TOKEN: "gw-ünïcode-☃" };

describe("secrets at rest", () => {
  it("round-trip for their run, and the sealed form holds no plaintext (not even in base64 of the JSON)", async () => {
    const sealed = await sealSecrets(SECRETS, "run-a", KEY);
    expect(await unsealSecrets(sealed, "run-a", KEY)).toEqual(SECRETS);
    const stored = JSON.stringify(sealed);
    for (const v of [...Object.values(SECRETS), ...Object.keys(SECRETS), btoa(JSON.stringify({ MY_API_KEY: SECRETS.MY_API_KEY }))]) expect(stored).not.toContain(v);
    // a fresh data key and IVs per run: two seals of the same secrets share nothing but the key id
    const again = await sealSecrets(SECRETS, "run-a", KEY);
    expect(again.keyId).toBe(sealed.keyId);
    expect(again.wrappedKey).not.toBe(sealed.wrappedKey);
    expect(again.ciphertext).not.toBe(sealed.ciphertext);
  });

  it("another operator key, another run's id, or one altered byte: a SecretsKeyError, no value in its message", async () => {
    const sealed = await sealSecrets(SECRETS, "run-a", KEY);
    const other = await unsealSecrets(sealed, "run-a", `${KEY}-rotated`).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(SecretsKeyError);
    expect((other as Error).message).toMatch(/another AJET_SECRETS_KEY/);
    await expect(unsealSecrets(sealed, "run-b", KEY)).rejects.toThrow(/do not decrypt for run run-b/);
    const bytes = Uint8Array.from(atob(sealed.ciphertext), (c) => c.charCodeAt(0));
    bytes[0] = (bytes[0] ?? 0) ^ 1;
    const altered = { ...sealed, ciphertext: btoa(String.fromCharCode(...bytes)) };
    const err = await unsealSecrets(altered, "run-a", KEY).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretsKeyError);
    expect((err as Error).message).not.toContain(SECRETS.MY_API_KEY);
  });

  it("no key or a short one: refused before anything is sealed, naming AJET_SECRETS_KEY and the fix", async () => {
    expect(secretsKeyProblem(undefined)).toMatch(/no AJET_SECRETS_KEY.*openssl rand -hex 32.*wrangler secret put AJET_SECRETS_KEY/);
    expect(secretsKeyProblem("short")).toMatch(/shorter than 32 characters/);
    expect(secretsKeyProblem(KEY)).toBeNull();
    await expect(sealSecrets(SECRETS, "run-a", undefined)).rejects.toBeInstanceOf(SecretsKeyError);
    await expect(unsealSecrets(await sealSecrets(SECRETS, "run-a", KEY), "run-a", "")).rejects.toThrow(/no AJET_SECRETS_KEY/);
  });
});
