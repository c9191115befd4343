/**
 * @module tasks/dataset-index — datasets read lazily, in flat memory: one streaming pass over a JSONL file (or one
 * row group at a time of a Parquet file) checks every row with the kind's field map and records, per accepted row,
 * where it is (byte offset and length; for Parquet its row number) in fixed-size chunks the caller stores. A task
 * is later read alone from its entry. Memory: one line (JSONL) or one row group (Parquet) plus one index chunk.
 *
 * Why an index and not a block shuffle: the scheduler's per-epoch order is a seeded permutation over [0, n)
 * computed one position at a time (`scheduler/epochs.ts`), so it needs only n and random access to row i. The
 * index gives both: 32 bytes per row (32 MB for 1,000,000 rows) in SQLite, never in memory, and the shuffle stays
 * exactly the one inline datasets get.
 */
import type { Task } from "../protocol/index.ts";
import type { ByteSource } from "./byte-source.ts";
import type { DatasetKind } from "./field-maps.ts";
import type { RejectedRow } from "./jsonl.ts";
import { DatasetChangedError, DatasetLoadError, DatasetSlowError, duplicateIdError, taskFromRow } from "./load.ts";
import { RowValueError } from "./values.ts";

/** A dataset file's format. */
export type DatasetFormat = "jsonl" | "parquet";

/** The format of a location: `.parquet` (before any `?query`) is Parquet, anything else JSONL. */
export function formatOf(location: string): DatasetFormat {
  return /\.parquet$/i.test(location.replace(/[?#].*$/, "")) ? "parquet" : "jsonl";
}

/** Entries per index chunk (one stored row): 4096 × 40 bytes = 160 KiB. */
export const INDEX_CHUNK_ENTRIES = 4096;
/**
 * Numbers per entry: offset, length, row index (for ids), line (for messages), and the row's digest (JSONL: FNV-1a
 * over its bytes, checked when the row is read again; Parquet: -1, none). Runs indexed before the digest have 4.
 */
export const INDEX_FIELDS = 5;
/** The entry width of a chunk stored before the digest (`StoredSource.entryFields` absent). */
export const LEGACY_INDEX_FIELDS = 4;
/** An entry without a digest. */
const NO_DIGEST = -1;

/**
 * FNV-1a (32-bit) of a row's bytes: what the index pass saw, so a row read later is known to be the same bytes
 * whatever the server's validators say (a weak ETag, equal lengths). Not a defence against a host that forges rows on
 * purpose (it serves what it likes at index time too); a replaced file passes with odds of 1 in 2^32 per row read.
 */
export function rowDigest(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Where one accepted row is. */
export interface IndexEntry {
  /** JSONL: byte offset of the line; Parquet: the row number */
  offset: number;
  /** JSONL: bytes of the line without its line ending; Parquet: 0 */
  length: number;
  /** 0-based index among the source's non-blank rows (the `<name>:<split>:<index>` id) */
  index: number;
  /** 1-based line (JSONL) or row (Parquet) number, for messages */
  line: number;
  /** {@link rowDigest} of a JSONL line's bytes; null when none was kept (Parquet, runs indexed before it) */
  digest: number | null;
}

/** What an index pass writes to: fixed-size chunks of entries, and own task ids (to refuse duplicates, BC-30). */
export interface IndexSink {
  /** Stores chunk `chunk` (entries `chunk × INDEX_CHUNK_ENTRIES …`), 4 float64 per entry. */
  putChunk(chunk: number, entries: Float64Array): void;
  /** Records an own task id seen at `line`; returns the line it was first seen at when it was seen before. */
  claimId(taskId: string, line: number): number | undefined;
}

/** The dataset's name, kind and split (what ids and field maps need). */
export interface RowOptions {
  name: string;
  kind: DatasetKind;
  split: string;
}

/** Bounds of an index pass. */
export interface IndexLimits {
  /** the longest line accepted, bytes (a longer one is rejected without being buffered) */
  maxRowBytes: number;
  /** the most accepted rows; more → DatasetLoadError naming `limitName` */
  maxRows: number;
  /** the setting that raises `maxRows`, named in the error */
  limitName: string;
}

/** What an index pass found. */
export interface IndexResult {
  /** accepted rows (= entries written) */
  count: number;
  /** refused rows */
  rejected: number;
  /** the first refused rows, with line and reason */
  samples: RejectedRow[];
}

const SAMPLES = 5;

/** Builds chunks of entries and hands each full one to the sink. */
export class ChunkWriter {
  #chunk = 0;
  #buf = new Float64Array(INDEX_CHUNK_ENTRIES * INDEX_FIELDS);
  #n = 0;
  count = 0;
  rejected = 0;
  readonly samples: RejectedRow[] = [];
  constructor(
    private readonly sink: IndexSink,
    private readonly limits: IndexLimits,
  ) {}

  reject(line: number, reason: string): void {
    this.rejected += 1;
    if (this.samples.length < SAMPLES) this.samples.push({ line, reason });
  }

  accept(e: IndexEntry): void {
    if (this.count >= this.limits.maxRows) {
      throw new DatasetLoadError(`the dataset has more than ${this.limits.maxRows} usable rows (${this.limits.limitName}); raise ${this.limits.limitName} or use a smaller dataset`);
    }
    const o = this.#n * INDEX_FIELDS;
    this.#buf[o] = e.offset;
    this.#buf[o + 1] = e.length;
    this.#buf[o + 2] = e.index;
    this.#buf[o + 3] = e.line;
    this.#buf[o + 4] = e.digest ?? NO_DIGEST;
    this.#n += 1;
    this.count += 1;
    if (this.#n === INDEX_CHUNK_ENTRIES) this.flush();
  }

  flush(): void {
    if (this.#n === 0) return;
    this.sink.putChunk(this.#chunk, this.#buf.slice(0, this.#n * INDEX_FIELDS));
    this.#chunk += 1;
    this.#n = 0;
  }

  result(): IndexResult {
    this.flush();
    return { count: this.count, rejected: this.rejected, samples: this.samples };
  }
}

/**
 * Entry `i` of a chunk (from {@link IndexSink.putChunk}'s array, or its stored bytes).
 * @param fields numbers per entry: {@link INDEX_FIELDS}, or {@link LEGACY_INDEX_FIELDS} for a run indexed before digests
 */
export function entryAt(chunk: Float64Array, i: number, fields: number = INDEX_FIELDS): IndexEntry {
  const o = i * fields;
  if (o + fields > chunk.length) throw new RangeError(`index entry ${i} is outside its chunk of ${chunk.length / fields}`);
  const digest = fields > LEGACY_INDEX_FIELDS && chunk[o + 4]! !== NO_DIGEST ? chunk[o + 4]! : null;
  return { offset: chunk[o]!, length: chunk[o + 1]!, index: chunk[o + 2]!, line: chunk[o + 3]!, digest };
}

/** A stored chunk's bytes as entries (copies, so the bytes may be any view). */
export function chunkFromBytes(bytes: ArrayBuffer | Uint8Array): Float64Array {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return new Float64Array(u8.slice().buffer);
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** One accepted or refused JSONL line → task (shared by the index pass and the later read, so both agree). */
function jsonlTask(bytes: Uint8Array, options: RowOptions, index: number): Task {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new RowValueError("the line is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RowValueError(`invalid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RowValueError(`a row must be a JSON object, got ${value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`}`);
  }
  return taskFromRow(value as Record<string, unknown>, { ...options, index });
}

/** A line of only ASCII space, tab and CR is blank (as `splitJsonlRecords`). */
function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Indexes a JSONL stream (same lines, blank lines, BOM and ids as `parseTasks`): every non-blank line is checked
 * with the kind's field map; accepted ones get an entry. A line over `maxRowBytes` is refused without being held.
 * @throws DatasetLoadError when the stream fails or more than `maxRows` rows are accepted
 */
export async function indexJsonl(stream: ReadableStream<Uint8Array>, options: RowOptions, sink: IndexSink, limits: IndexLimits): Promise<IndexResult> {
  const w = new ChunkWriter(sink, limits);
  let parts: Uint8Array[] = [];
  let held = 0;
  let overlong = false;
  let lineStart = 0; // absolute offset of the current line
  let at = 0; // absolute offset of the current chunk
  let line = 0;
  let index = 0;
  const endLine = (end: number) => {
    line += 1;
    let bytes = concat(parts, held);
    let offset = lineStart;
    parts = [];
    held = 0;
    if (offset === 0 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      bytes = bytes.subarray(3);
      offset = 3;
    }
    if (bytes.byteLength > 0 && bytes[bytes.byteLength - 1] === 0x0d) bytes = bytes.subarray(0, -1);
    const wasOverlong = overlong;
    overlong = false;
    lineStart = end + 1;
    if (!wasOverlong && isBlank(bytes)) return;
    const rowIndex = index++;
    if (wasOverlong) return w.reject(line, `the line is over ${limits.maxRowBytes} bytes; shorten it or raise AJET_MAX_ROW_BYTES`);
    try {
      const task = jsonlTask(bytes, options, rowIndex);
      if (task.task_id.includes(":id=")) {
        const first = sink.claimId(task.task_id, line);
        if (first !== undefined) throw duplicateIdError(task.task_id, first);
      }
      w.accept({ offset, length: bytes.byteLength, index: rowIndex, line, digest: rowDigest(bytes) });
    } catch (err) {
      if (!(err instanceof RowValueError)) throw err;
      w.reject(line, err.message);
    }
  };
  const hold = (piece: Uint8Array) => {
    if (overlong || piece.byteLength === 0) return;
    if (held + piece.byteLength > limits.maxRowBytes + 4) {
      overlong = true; // + 4: room for a BOM and a CR that are not part of the row
      parts = [];
      held = 0;
      return;
    }
    parts.push(piece.slice()); // a copy: the chunk it came from can then be freed
    held += piece.byteLength;
  };
  const reader = stream.getReader();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        const message = `reading the dataset failed after ${at} bytes: ${(err as Error).message}`;
        throw err instanceof DatasetSlowError ? new DatasetSlowError(message) : new DatasetLoadError(message);
      }
      if (chunk.done) break;
      const bytes = chunk.value;
      let from = 0;
      for (let nl = bytes.indexOf(0x0a, from); nl !== -1; nl = bytes.indexOf(0x0a, from)) {
        // a line inside this chunk is read in place (no copy); only a line split across chunks is held
        if (held === 0 && !overlong && nl - from <= limits.maxRowBytes + 4) parts = [bytes.subarray(from, nl)], (held = nl - from);
        else hold(bytes.subarray(from, nl));
        endLine(at + nl);
        from = nl + 1;
      }
      hold(bytes.subarray(from));
      at += bytes.byteLength;
    }
  } finally {
    reader.releaseLock();
  }
  if (held > 0 || overlong) endLine(at);
  return w.result();
}

/**
 * Reads one indexed JSONL row as its task.
 * @throws DatasetLoadError when the read fails or the row no longer maps (the file changed without a new ETag)
 */
export async function readJsonlTask(source: ByteSource, etag: string | null, entry: IndexEntry, options: RowOptions): Promise<Task> {
  const bytes = await source.read(entry.offset, entry.length, etag);
  if (entry.digest !== null && rowDigest(bytes) !== entry.digest) {
    throw new DatasetChangedError(`dataset ${source.where} line ${entry.line} is not the row the run indexed (its bytes differ); the file was replaced during the run: start a new run on the new file`);
  }
  try {
    return jsonlTask(bytes, options, entry.index);
  } catch (err) {
    if (!(err instanceof RowValueError)) throw err;
    throw new DatasetChangedError(`dataset ${source.where} line ${entry.line} no longer reads as at the start of the run (${err.message}); the file was replaced during the run: start a new run on the new file`);
  }
}
