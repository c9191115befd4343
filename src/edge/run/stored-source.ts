/** @module edge/run/stored-source — the descriptor of one dataset a run stores at create (edge/run/storage). */
import type { CountdownGeneratorSettings, DatasetFormat, RowOptions } from "../../tasks/index.ts";

/**
 * How a run reads one dataset (stored once at create; small):
 * - `stored`: inline rows, all in `tasks`;
 * - `generate`: the Countdown generator, task i made when first needed;
 * - `file`: a JSONL or Parquet file behind an http(s) URL or in R2, indexed at create (`dataset_index`), task i
 *   read (one ranged read) when first needed; `size` and `etag` are the indexed version's.
 */
export type StoredSource =
  | { type: "stored"; count: number }
  | { type: "generate"; count: number; settings: CountdownGeneratorSettings & { name: string }; answerReaders?: string[] }
  | {
      type: "file";
      count: number;
      url: string;
      format: DatasetFormat;
      size: number;
      etag: string | null;
      options: RowOptions;
      answerReaders?: string[];
      /** numbers per index entry (tasks/dataset-index `INDEX_FIELDS`, with the row digest); absent: 4, before digests */
      entryFields?: number;
    };
