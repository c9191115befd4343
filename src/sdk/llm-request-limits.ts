/**
 * @module sdk/llm-request-limits — the size limits of one LLM request body and of the images in it (issue 20 §1).
 * Images travel inline as `data:` URLs (`image_url` parts of a chat message, llm-routes §8; `input_image` of the
 * Responses API; base64 `image` blocks of the Messages API — the last two are dropped by the server's adapters but
 * still sent). The upstream server sets no limit of its own; ours come from the Worker: the body is held in an
 * isolate of 128 MB several times over (the SDK's string, the bytes sent, the transcript's copy). Pure.
 */
import { AbortCause, EpisodeAbortError } from "../port/index.ts";

/** The largest LLM request body, UTF-8 bytes (16 MiB). */
export const MAX_LLM_REQUEST_BYTES = 16 * 1024 * 1024;
/** The largest inline image, bytes after base64 decoding (8 MiB). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

/** The decoded size of a base64 payload of `length` characters, bytes. */
export function base64Bytes(payload: string): number {
  const clean = payload.replace(/\s+/g, "");
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

/** A `data:` URL's media type and decoded size, or null when `value` is not a base64 data URL. */
export function dataUrlImage(value: string): { mediaType: string; bytes: number } | null {
  const m = /^data:([^;,]*)((?:;[^;,]*)*);base64,/i.exec(value.slice(0, 256));
  if (!m) return null;
  return { mediaType: m[1] || "application/octet-stream", bytes: base64Bytes(value.slice(m[0].length)) };
}

/** Every inline image of a request body (data URLs and base64 `source` blocks), with where it sits. */
function* inlineImages(value: unknown, path: string): Generator<{ where: string; mediaType: string; bytes: number }> {
  if (typeof value === "string") {
    const image = dataUrlImage(value);
    if (image) yield { where: path, ...image };
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* inlineImages(v, `${path}[${i}]`);
    return;
  }
  if (value && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    if (obj["type"] === "base64" && typeof obj["data"] === "string") {
      yield { where: path, mediaType: String(obj["media_type"] ?? "application/octet-stream"), bytes: base64Bytes(obj["data"]) };
      return;
    }
    for (const [k, v] of Object.entries(obj)) yield* inlineImages(v, path ? `${path}.${k}` : k);
  }
}

/**
 * Checks an LLM request body (the JSON text the SDK sends) against {@link MAX_LLM_REQUEST_BYTES} and every inline
 * image in it against {@link MAX_IMAGE_BYTES}, before anything is sent.
 * @throws EpisodeAbortError `request_too_large` naming the limit, the size found and where (never retried: the same
 *   task would send the same body again)
 */
export function checkLlmRequestSize(body: string): void {
  const bytes = new TextEncoder().encode(body).length;
  if (bytes > MAX_LLM_REQUEST_BYTES) {
    throw new EpisodeAbortError(
      AbortCause.requestTooLarge,
      `the LLM request body is ${mib(bytes)}, over the limit of ${mib(MAX_LLM_REQUEST_BYTES)} per request (MAX_LLM_REQUEST_BYTES); send fewer or smaller images, or a shorter history`,
    );
  }
  if (!body.includes(";base64,") && !body.includes('"base64"')) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return; // not JSON: the server answers it
  }
  for (const image of inlineImages(parsed, "")) {
    if (image.bytes > MAX_IMAGE_BYTES) {
      throw new EpisodeAbortError(
        AbortCause.requestTooLarge,
        `the image at ${image.where} (${image.mediaType}) is ${mib(image.bytes)}, over the limit of ${mib(MAX_IMAGE_BYTES)} per image (MAX_IMAGE_BYTES); downscale it or send it as a smaller JPEG`,
      );
    }
  }
}

/**
 * The stub a transcript keeps instead of an inline image: media type and size, never the bytes.
 * @returns `[image image/png, 1.2 MiB, not kept]`
 */
export function imageStub(mediaType: string, bytes: number): string {
  return `[image ${mediaType}, ${bytes >= MIB ? mib(bytes) : `${(bytes / 1024).toFixed(1)} KiB`}, not kept]`;
}

/** A deep copy of a request body with every inline image replaced by {@link imageStub} (for transcripts). */
export function stubImages(value: unknown): unknown {
  if (typeof value === "string") {
    const image = dataUrlImage(value);
    return image ? imageStub(image.mediaType, image.bytes) : value;
  }
  if (Array.isArray(value)) return value.map(stubImages);
  if (value && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    if (obj["type"] === "base64" && typeof obj["data"] === "string") {
      return { ...obj, data: imageStub(String(obj["media_type"] ?? "application/octet-stream"), base64Bytes(obj["data"])) };
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, stubImages(v)]));
  }
  return value;
}
