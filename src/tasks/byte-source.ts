/**
 * @module tasks/byte-source — random access to a dataset file that is never held whole: an http(s) URL (Range
 * requests) or an R2 object (`r2://BUCKET/KEY`, ranged `get`). A run reads the file once as a stream to index it,
 * then reads one row's bytes at a time as its cursor advances. Every read after the first names the version it
 * indexed (ETag), so a file replaced mid-run is an error, never a different row under the same task id.
 */
import { DatasetChangedError, DatasetLoadError, DatasetNoRangeError, DatasetSlowError } from "./load.ts";

/** Size and version of a dataset file. */
export interface ByteSourceStat {
  /** total bytes */
  size: number;
  /** the version tag (HTTP ETag / R2 etag), null when the server gives none */
  etag: string | null;
}

/** A dataset file read by byte ranges. Every method throws {@link DatasetLoadError} naming `where`. */
export interface ByteSource {
  /** the location as the user wrote it (used in messages) */
  readonly where: string;
  /** Size and version; checks that ranged reads work (an HTTP server must answer a Range request with 206). */
  stat(): Promise<ByteSourceStat>;
  /**
   * The whole file as a stream of bytes (read once, to index it), of version `etag` when given.
   * @param deadlineAtMs epoch ms by which the whole stream must have arrived (http: past it the stream errors)
   */
  stream(etag: string | null, deadlineAtMs?: number): Promise<ReadableStream<Uint8Array>>;
  /** Bytes `[offset, offset + length)` of version `etag` (null: whatever is there). */
  read(offset: number, length: number, etag: string | null): Promise<Uint8Array>;
}

/** The subset of an R2 bucket binding the readers use (`R2Bucket` in workerd, miniflare's locally). */
export interface R2BucketLike {
  head(key: string): Promise<{ size: number; etag: string; httpEtag?: string } | null>;
  get(
    key: string,
    options?: { range?: { offset: number; length: number }; onlyIf?: { etagMatches?: string } },
  ): Promise<{ size: number; etag: string; body?: ReadableStream<Uint8Array>; arrayBuffer?: () => Promise<ArrayBuffer> } | null>;
}

/** An `r2://BUCKET/KEY` dataset location, split. `bucket` names an R2 binding of the Worker (e.g. `DATASETS`). */
export interface R2Location {
  bucket: string;
  key: string;
}

/** `r2://BUCKET/KEY` → its parts, or null for any other string (a KEY is required; it may contain `/`). */
export function parseR2Url(url: string): R2Location | null {
  const m = /^r2:\/\/([A-Za-z_][A-Za-z0-9_]*)\/(.+)$/.exec(url);
  return m ? { bucket: m[1]!, key: m[2]! } : null;
}

/** A weak ETag (`W/"…"`) cannot be used with If-Match (RFC 9110 §13.1.1): reads then go without a version check. */
function strongEtag(etag: string | null): string | null {
  return etag && !etag.startsWith("W/") ? etag : null;
}

/** How long an http(s) dataset host may take (the caps table, edge/ground/caps.ts, sets them). Milliseconds. */
export interface HostTiming {
  /** from the request to the response's headers */
  firstByteMs: number;
  /** between two chunks of a body */
  idleMs: number;
  /** the least average rate of a body, bytes per second, checked once it has run `rateGraceMs` */
  minBytesPerSecond: number;
  rateGraceMs: number;
}

/** The defaults of {@link HostTiming}: 10 s to the headers, 10 s between chunks, 16 KiB/s after 5 s. */
export const DEFAULT_HOST_TIMING: Readonly<HostTiming> = { firstByteMs: 10_000, idleMs: 10_000, minBytesPerSecond: 16 * 1024, rateGraceMs: 5_000 };

/**
 * A response body that errors (a DatasetLoadError naming `url`, what arrived and the fix) when no chunk comes for
 * `idleMs`, when its average rate stays under `minBytesPerSecond` past `rateGraceMs`, or past `deadlineAtMs`.
 * The underlying body is cancelled then (the connection is given up).
 */
export function guardedBody(body: ReadableStream<Uint8Array>, url: string, timing: HostTiming, deadlineAtMs = Infinity, now: () => number = Date.now): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const startMs = now();
  let bytes = 0;
  const fix = "serve the file from a host that sends it steadily, or put it in R2 (r2://BUCKET/KEY)";
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const left = deadlineAtMs - now();
      const waitMs = Math.max(0, Math.min(timing.idleMs, left));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), waitMs)));
      const next = await Promise.race([reader.read(), timeout]).finally(() => timer !== undefined && clearTimeout(timer));
      const elapsedMs = now() - startMs;
      const fail = (why: string) => {
        reader.cancel().catch(() => undefined);
        controller.error(new DatasetSlowError(`dataset ${url}: ${why} (${bytes} bytes in ${Math.round(elapsedMs / 1000)} s); ${fix}`));
      };
      if (next === "timeout") return fail(left <= timing.idleMs ? `the read took longer than its budget of ${Math.round((deadlineAtMs - startMs) / 1000)} s` : `the host sent nothing for ${timing.idleMs / 1000} s`);
      if (next.done) return controller.close();
      bytes += next.value.byteLength;
      if (timing.minBytesPerSecond > 0 && elapsedMs > timing.rateGraceMs && (bytes * 1000) / elapsedMs < timing.minBytesPerSecond) {
        return fail(`the host sends under ${timing.minBytesPerSecond} bytes/s`);
      }
      controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * An http(s) dataset file. `stat` asks for `bytes=0-0` and requires `206` with a `Content-Range` total: a server
 * that ignores Range would make every row read download the whole file, so it is refused up front.
 * Every request waits at most `timing.firstByteMs` for its headers; every body is a {@link guardedBody}.
 */
export function httpByteSource(url: string, deps: { fetch?: typeof fetch; signal?: AbortSignal; timing?: HostTiming } = {}): ByteSource {
  const doFetch = deps.fetch ?? fetch;
  const timing = deps.timing ?? DEFAULT_HOST_TIMING;
  const get = async (headers: Record<string, string>, deadlineAtMs = Infinity): Promise<Response> => {
    const abort = new AbortController();
    const onAbort = () => abort.abort(deps.signal?.reason);
    deps.signal?.addEventListener("abort", onAbort);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // rejected before the abort, so the race settles with this reason, not the fetch's "aborted"
        reject(new DatasetSlowError(`dataset ${url}: the host sent no answer (headers) within ${timing.firstByteMs / 1000} s; serve the file from a host that answers, or put it in R2 (r2://BUCKET/KEY)`));
        abort.abort();
      }, timing.firstByteMs);
    });
    try {
      const res = await Promise.race([doFetch(url, { headers, signal: abort.signal }), late]);
      return res.body ? new Response(guardedBody(res.body, url, timing, deadlineAtMs), { status: res.status, statusText: res.statusText, headers: res.headers }) : res;
    } catch (err) {
      if (err instanceof DatasetLoadError) throw err;
      throw new DatasetLoadError(`cannot fetch dataset ${url}: ${(err as Error).message}`);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      deps.signal?.removeEventListener("abort", onAbort);
    }
  };
  const versioned = (etag: string | null, headers: Record<string, string>) => {
    const strong = strongEtag(etag);
    return strong ? { ...headers, "if-match": strong } : headers;
  };
  const fail = async (res: Response, what: string): Promise<never> => {
    await res.body?.cancel();
    if (res.status === 412) throw new DatasetChangedError(`dataset ${url} changed since the run indexed it (ETag differs); start a new run`);
    throw new DatasetLoadError(`cannot fetch dataset ${url}: HTTP ${res.status} ${res.statusText} ${what}`.replace(/\s+$/, ""));
  };
  return {
    where: url,
    async stat() {
      const res = await get({ range: "bytes=0-0", "accept-encoding": "identity" });
      if (res.status !== 206) {
        if (!res.ok) return fail(res, "");
        await res.body?.cancel();
        throw new DatasetNoRangeError(
          `dataset ${url} is served without Range support (HTTP ${res.status} to a Range request); ` +
            "serve it from a server that answers Range requests (any static file server, R2, S3), or put it in R2 (r2://BUCKET/KEY); " +
            "a Worker with the R2 bucket DATASETS bound copies such a file there itself",
        );
      }
      await res.body?.cancel();
      const total = /\/(\d+)\s*$/.exec(res.headers.get("content-range") ?? "")?.[1];
      if (total === undefined) throw new DatasetLoadError(`dataset ${url}: the server's Range answer has no total size (Content-Range "bytes 0-0/SIZE")`);
      return { size: Number(total), etag: res.headers.get("etag") };
    },
    async stream(etag, deadlineAtMs) {
      const res = await get(versioned(etag, { "accept-encoding": "identity" }), deadlineAtMs);
      if (!res.ok || !res.body) return fail(res, "");
      return res.body;
    },
    async read(offset, length, etag) {
      if (length === 0) return new Uint8Array(0);
      const res = await get(versioned(etag, { range: `bytes=${offset}-${offset + length - 1}`, "accept-encoding": "identity" }));
      if (res.status !== 206) return fail(res, `(asked for bytes ${offset}-${offset + length - 1})`);
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await res.arrayBuffer());
      } catch (err) {
        throw err instanceof DatasetLoadError ? err : new DatasetLoadError(`cannot read dataset ${url}: ${(err as Error).message}`);
      }
      if (bytes.byteLength !== length) throw new DatasetLoadError(`dataset ${url}: asked for ${length} bytes at ${offset}, got ${bytes.byteLength}`);
      return bytes;
    },
  };
}

/** An R2 object as a dataset file (`where` is its `r2://BUCKET/KEY` URL). */
export function r2ByteSource(bucket: R2BucketLike, location: R2Location): ByteSource {
  const where = `r2://${location.bucket}/${location.key}`;
  const missing = () => new DatasetLoadError(`dataset ${where} does not exist (no such key in bucket ${location.bucket})`);
  const changed = () => new DatasetChangedError(`dataset ${where} changed since the run indexed it (etag differs); start a new run`);
  const call = async <T>(op: () => Promise<T>): Promise<T> => {
    try {
      return await op();
    } catch (err) {
      throw new DatasetLoadError(`cannot read dataset ${where}: ${(err as Error).message}`);
    }
  };
  return {
    where,
    async stat() {
      const head = await call(() => bucket.head(location.key));
      if (!head) throw missing();
      return { size: head.size, etag: head.etag };
    },
    async stream(etag) {
      const obj = await call(() => bucket.get(location.key, etag ? { onlyIf: { etagMatches: etag } } : {}));
      if (!obj) throw missing();
      if (!obj.body) throw changed();
      return obj.body;
    },
    async read(offset, length, etag) {
      if (length === 0) return new Uint8Array(0);
      const obj = await call(() => bucket.get(location.key, { range: { offset, length }, ...(etag ? { onlyIf: { etagMatches: etag } } : {}) }));
      if (!obj) throw missing();
      if (!obj.body || !obj.arrayBuffer) throw changed();
      const bytes = new Uint8Array(await call(() => obj.arrayBuffer!()));
      if (bytes.byteLength !== length) throw new DatasetLoadError(`dataset ${where}: asked for ${length} bytes at ${offset}, got ${bytes.byteLength}`);
      return bytes;
    },
  };
}
