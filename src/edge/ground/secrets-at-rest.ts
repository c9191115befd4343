/**
 * @module edge/ground/secrets-at-rest — a run's secrets at rest, envelope-encrypted with WebCrypto
 * (docs/security-and-limits.md, "Secrets at rest"). The operator holds one key in the Worker's secrets
 * (`AJET_SECRETS_KEY`, at least {@link MIN_SECRETS_KEY_LENGTH} characters, e.g. `openssl rand -hex 32`); a key-encryption
 * key is derived from it with HKDF-SHA-256. Each run gets its own random AES-256-GCM data key: the run's secrets
 * (a JSON object) are encrypted with it, and the data key is stored only wrapped by the key-encryption key. Both
 * are bound to the run's id (GCM additional data), so one run's sealed secrets cannot be replayed into another.
 * When the run ends its sealed secrets and wrapped key are deleted; whatever copy is left in SQLite's write-ahead log
 * or a backup is ciphertext, useless without the operator's key (which never enters storage).
 */

/** The shortest `AJET_SECRETS_KEY` accepted (shorter ones are refused: fail closed). */
export const MIN_SECRETS_KEY_LENGTH = 32;

/** The Worker secret that holds the operator's key. */
export const SECRETS_KEY_VAR = "AJET_SECRETS_KEY";

/** How to set the key, for every message that needs it. */
export const SECRETS_KEY_FIX = `set a random one (e.g. \`openssl rand -hex 32\`) with \`npx wrangler secret put ${SECRETS_KEY_VAR}\` (or in .dev.vars for wrangler dev; \`ajet-edge dev\` makes its own)`;

/** A run's secrets as stored: ciphertext and the wrapped data key, base64; `keyId` names the operator key (not secret). */
export interface SealedSecrets {
  v: 1;
  /** a fingerprint of the operator key that sealed them (the first 8 bytes of a derived value, hex): tells a changed key apart */
  keyId: string;
  /** the run's data key (raw AES-256), wrapped with AES-GCM under the key-encryption key */
  wrappedKey: string;
  /** the 12-byte IV of the wrapping */
  keyIv: string;
  /** the 12-byte IV of the secrets' encryption */
  iv: string;
  /** AES-GCM of the UTF-8 JSON of the secrets (tag included) */
  ciphertext: string;
}

/** The operator key is missing, too short, or not the one the secrets were sealed with. */
export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretsKeyError";
  }
}

/** WebCrypto's key type, named the same way in workerd's and Node's type sets. */
type Key = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

const enc = new TextEncoder();
const SALT = enc.encode("ajet-edge secrets at rest v1");

const b64 = (bytes: ArrayBuffer | Uint8Array): string => {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = "";
  for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(s);
};
const unb64 = (text: string): Uint8Array<ArrayBuffer> => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/**
 * Why `raw` is not a usable operator key (unset, or shorter than {@link MIN_SECRETS_KEY_LENGTH}), or null when it is.
 * The message names the var and the fix, never the value.
 */
export function secretsKeyProblem(raw: string | undefined): string | null {
  if (!raw) return `the Worker has no ${SECRETS_KEY_VAR}, so a run's secrets cannot be stored encrypted: ${SECRETS_KEY_FIX}`;
  if (raw.length < MIN_SECRETS_KEY_LENGTH) return `${SECRETS_KEY_VAR} is shorter than ${MIN_SECRETS_KEY_LENGTH} characters: ${SECRETS_KEY_FIX}`;
  return null;
}

/** The key-encryption key and its id, derived from the operator key. @throws SecretsKeyError when it is unusable */
async function operatorKey(raw: string | undefined): Promise<{ kek: Key; keyId: string }> {
  const problem = secretsKeyProblem(raw);
  if (problem) throw new SecretsKeyError(problem);
  const material = await crypto.subtle.importKey("raw", enc.encode(raw), "HKDF", false, ["deriveKey", "deriveBits"]);
  const kek = await crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: SALT, info: enc.encode("kek") }, material, { name: "AES-GCM", length: 256 }, false, ["wrapKey", "unwrapKey"]);
  const idBits = new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: SALT, info: enc.encode("key id") }, material, 64));
  return { kek, keyId: [...idBits].map((b) => b.toString(16).padStart(2, "0")).join("") };
}

/**
 * Encrypts a run's secrets under a fresh data key wrapped by the operator key.
 * @param runId the run they belong to (bound as additional data: they unseal for this run only)
 * @param operatorSecretsKey the Worker's `AJET_SECRETS_KEY`
 * @throws SecretsKeyError when the operator key is unset or too short
 */
export async function sealSecrets(secrets: Readonly<Record<string, string>>, runId: string, operatorSecretsKey: string | undefined): Promise<SealedSecrets> {
  const { kek, keyId } = await operatorKey(operatorSecretsKey);
  const dataKey = (await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt", "decrypt"])) as Key;
  const aad = enc.encode(runId);
  const keyIv = crypto.getRandomValues(new Uint8Array(12));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const wrappedKey = await crypto.subtle.wrapKey("raw", dataKey, kek, { name: "AES-GCM", iv: keyIv, additionalData: aad });
  const ciphertext = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad }, dataKey, enc.encode(JSON.stringify(secrets)));
  return { v: 1, keyId, wrappedKey: b64(wrappedKey), keyIv: b64(keyIv), iv: b64(iv), ciphertext: b64(ciphertext) };
}

/**
 * Decrypts a run's sealed secrets.
 * @throws SecretsKeyError when the operator key is unset, too short, another one than sealed them, or the data was
 *   altered or belongs to another run (the message names the var and the fix, never a value)
 */
export async function unsealSecrets(sealed: SealedSecrets, runId: string, operatorSecretsKey: string | undefined): Promise<Record<string, string>> {
  const { kek, keyId } = await operatorKey(operatorSecretsKey);
  if (keyId !== sealed.keyId) throw new SecretsKeyError(`the run's secrets were encrypted with another ${SECRETS_KEY_VAR} than the Worker has now (it changed during the run); the run cannot use them: start it again`);
  const aad = enc.encode(runId);
  try {
    const dataKey = await crypto.subtle.unwrapKey("raw", unb64(sealed.wrappedKey), kek, { name: "AES-GCM", iv: unb64(sealed.keyIv), additionalData: aad }, { name: "AES-GCM", length: 256 }, false, ["decrypt"]);
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: unb64(sealed.iv), additionalData: aad }, dataKey, unb64(sealed.ciphertext));
    return JSON.parse(new TextDecoder().decode(plain)) as Record<string, string>;
  } catch {
    throw new SecretsKeyError(`the run's stored secrets do not decrypt for run ${runId} (altered, or sealed for another run); the run cannot use them: start it again`);
  }
}
