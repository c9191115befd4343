/**
 * @module node/dataset-file — Node-only dataset readers: a JSONL file on disk, and a dataset spec whose source may
 * be a `path` (the platform-free readers in `src/tasks` cannot open files).
 */
import { readFile } from "node:fs/promises";
import { decodeUtf8, DatasetLoadError, loadDataset, parseTasks } from "../tasks/index.ts";
import type { DatasetSpec, LoadOptions, LoadResult, ReaderDeps } from "../tasks/index.ts";

/**
 * Reads a file as strict UTF-8 text (BOM removed).
 * @throws DatasetLoadError naming the path when it cannot be read or is not UTF-8.
 */
export async function readUtf8File(path: string): Promise<string> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new DatasetLoadError(`cannot read dataset ${path}: ${readFailure(err as NodeJS.ErrnoException)}`);
  }
  return decodeUtf8(bytes, path);
}

/** One plain clause for a failed read: what went wrong and the fix, not the errno text. */
function readFailure(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case "ENOENT":
      return "no such file; give the path of a JSONL file, or a URL (http(s)://… or r2://BUCKET/KEY)";
    case "EISDIR":
      return "it is a directory; give the path of a JSONL file inside it";
    case "EACCES":
    case "EPERM":
      return "permission denied; make the file readable by this user";
    default:
      return err.code ? `cannot open it (${err.code})` : err.message;
  }
}

/** Reads a JSONL file into tasks (see `parseTasks` for ids, line numbers and rejections). */
export async function readTasksFromFile(path: string, options: LoadOptions): Promise<LoadResult> {
  return parseTasks(await readUtf8File(path), options);
}

/** {@link loadDataset} with `path` sources enabled (reads files with {@link readUtf8File}). */
export async function loadDatasetFromNode(
  spec: DatasetSpec,
  deps: Omit<ReaderDeps, "readText"> = {},
  strict = false,
): Promise<LoadResult> {
  return loadDataset(spec, { ...deps, readText: readUtf8File }, strict);
}
