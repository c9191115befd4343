/**
 * @module edge/ground/caps — the one table of the Worker's caps (issue 18): every count, size and time bound of a
 * run spec, its datasets and `POST /runs` itself, with its default, the range an operator var may set, its unit and
 * the way around it. `docs/security-and-limits.md` prints the same table (a unit test holds the two together).
 * Everything that reads a cap reads it here ({@link capsFrom}): `limits-config.ts` and `dataset-limits.ts` are views
 * of this table. A var that is not a whole number is ignored (the default applies); a whole number outside the row's
 * range is clamped into it, so no var can lift a bound past what the platform holds (a SQLite row ≤ 2 MB, 128 MB
 * per isolate, an alarm's 15 minutes). Never a 500 for a bad var.
 */

/** One cap: the var that sets it (null: fixed), its default, the range a var may set, its unit and what it bounds. */
export interface CapRow {
  readonly var: string | null;
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly unit: "bytes" | "count" | "seconds" | "characters";
  /** what it bounds, in a few words (the docs' table and the refusals' wording) */
  readonly what: string;
  /** what to do instead when a request is over it (named in the refusal) */
  readonly around: string;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** The table. Order = the docs' order. */
export const CAPS = {
  bodyBytes: { var: "AJET_MAX_BODY_BYTES", default: 8 * MiB, min: 1, max: 32 * MiB, unit: "bytes", what: "one request body", around: "give large datasets as a dataset URL instead of inline tasks" },
  swarms: { var: "AJET_MAX_SWARMS", default: 16, min: 1, max: 64, unit: "count", what: "swarm servers of one run (`swarms`)", around: "split the run into several runs" },
  datasets: { var: "AJET_MAX_DATASETS", default: 64, min: 1, max: 256, unit: "count", what: "datasets of one run (`datasets`)", around: "merge small datasets into one file, or split the run" },
  secrets: { var: "AJET_MAX_SECRETS", default: 32, min: 0, max: 128, unit: "count", what: "secrets of one run (`secrets`)", around: "put shared secrets in the operator's AJET_SECRETS" },
  secretBytes: { var: "AJET_MAX_SECRET_BYTES", default: 8 * KiB, min: 1, max: 64 * KiB, unit: "bytes", what: "one secret's value (UTF-8)", around: "keep large credentials (files) outside the run and pass a reference" },
  gatewayHeaders: { var: "AJET_MAX_GATEWAY_HEADERS", default: 16, min: 0, max: 32, unit: "count", what: "gateway headers of one swarm (`swarms[].headers`)", around: "let the gateway read fewer headers" },
  yamlBytes: { var: "AJET_MAX_YAML_BYTES", default: 64 * KiB, min: 1, max: 256 * KiB, unit: "bytes", what: "the job's YAML (`job.baseYaml`, UTF-8)", around: "drop comments and defaults from the YAML; only the keys that differ are needed" },
  jobOptions: { var: null, default: 64, min: 64, max: 64, unit: "count", what: "keys of `job`", around: "put further settings in job.baseYaml" },
  nameChars: { var: null, default: 64, min: 64, max: 64, unit: "characters", what: "a name (swarm, dataset, function, split, secret)", around: "use a shorter name" },
  stringChars: { var: null, default: 2048, min: 2048, max: 2048, unit: "characters", what: "any other string of the spec (URLs, job values)", around: "shorten it; long text belongs in a dataset or job.baseYaml" },
  keyChars: { var: null, default: 128, min: 128, max: 128, unit: "characters", what: "any object key", around: "use a shorter key" },
  listItems: { var: null, default: 256, min: 256, max: 256, unit: "count", what: "any other list of the spec (job lists, answerReaders)", around: "shorten the list" },
  objectKeys: { var: null, default: 256, min: 256, max: 256, unit: "count", what: "keys of any other object (an inline task row included)", around: "drop fields the rollout function does not read" },
  storedSpecBytes: { var: null, default: 512 * KiB, min: 512 * KiB, max: 512 * KiB, unit: "bytes", what: "the run spec as stored (inline rows apart) with its job YAML: one SQLite row (≤ 2 MB)", around: "shorten job values and headers; long text belongs in a dataset" },
  inlineRows: { var: "AJET_MAX_INLINE_ROWS", default: 50_000, min: 1, max: 1_000_000, unit: "count", what: "inline task rows of one run", around: "use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row" },
  inlineBytes: { var: "AJET_MAX_INLINE_BYTES", default: 4 * MiB, min: 1, max: 32 * MiB, unit: "bytes", what: "inline task rows of one run (their JSON)", around: "use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row" },
  rowBytes: { var: "AJET_MAX_ROW_BYTES", default: 1 * MiB, min: 1, max: 1536 * KiB, unit: "bytes", what: "one task row (inline JSON, a JSONL line, a Parquet row as JSON): a task is one SQLite row (≤ 2 MB)", around: "shorten the row" },
  datasetRows: { var: "AJET_MAX_DATASET_ROWS", default: 10_000_000, min: 1, max: 100_000_000, unit: "count", what: "usable rows of one URL/R2 dataset", around: "use a smaller dataset, or split it over several runs" },
  generatedTasks: { var: "AJET_MAX_GENERATED_TASKS", default: 100_000, min: 1, max: 2 ** 31, unit: "count", what: "tasks of one dataset's `generate`", around: "generate fewer, or give the tasks as a dataset URL" },
  episodesPerRun: { var: "AJET_MAX_EPISODES_PER_RUN", default: 1_000_000, min: 1, max: 1_000_000_000, unit: "count", what: "episodes one run plans", around: "set maxSteps, fewer epochs or numRepeat, or split the run" },
  runsInFlight: { var: "AJET_MAX_RUNS_IN_FLIGHT", default: 10, min: 1, max: 10_000, unit: "count", what: "runs one token has in flight", around: "stop one (POST /runs/:id/stop) or wait for one to finish" },
  firstByteSeconds: { var: "AJET_DATASET_FIRST_BYTE_SECONDS", default: 10, min: 1, max: 60, unit: "seconds", what: "a dataset host's answer (headers) to one request", around: "serve the file from a host that answers, or from R2 (r2://BUCKET/KEY)" },
  idleSeconds: { var: "AJET_DATASET_IDLE_SECONDS", default: 10, min: 1, max: 120, unit: "seconds", what: "a dataset body without a byte", around: "serve the file from a host that keeps sending, or from R2" },
  minBytesPerSecond: { var: "AJET_DATASET_MIN_BYTES_PER_SECOND", default: 16 * KiB, min: 1, max: 16 * MiB, unit: "bytes", what: "a dataset body's average rate, per second, once it has run 5 s", around: "serve the file from a faster host, or from R2" },
  inlineIndexSeconds: { var: "AJET_INLINE_INDEX_SECONDS", default: 20, min: 1, max: 60, unit: "seconds", what: "the index pass of the files read inside POST /runs (files over backgroundIndexBytes are indexed after the answer)", around: "serve the file faster, or from R2" },
  indexBudgetSeconds: { var: "AJET_INDEX_BUDGET_SECONDS", default: 600, min: 10, max: 840, unit: "seconds", what: "the index pass of one file in the background", around: "serve the file faster, or from R2" },
  backgroundIndexBytes: { var: "AJET_BACKGROUND_INDEX_BYTES", default: 8 * MiB, min: 0, max: 1 * GiB, unit: "bytes", what: "dataset files indexed inside POST /runs (over: in the background)", around: "—" },
} as const satisfies Record<string, CapRow>;

/**
 * The seconds within which `POST /runs` answers whatever its dataset hosts do: each file's `stat` (its headers), the
 * inline index pass, and 5 s of the Worker's own work (parse, validate, stage, store).
 * @param files the run's URL dataset files
 */
export function postRunsBoundSeconds(caps: Pick<Caps, "firstByteSeconds" | "inlineIndexSeconds">, files: number): number {
  return files * caps.firstByteSeconds + caps.inlineIndexSeconds + 5;
}

/** A cap's name (a key of {@link CAPS}). */
export type CapName = keyof typeof CAPS;

/** Every cap in force, by name (numbers in the row's unit). */
export type Caps = { readonly [K in CapName]: number };

/** The vars of {@link CAPS} (all optional strings, as wrangler passes vars). */
export type CapVars = Partial<Record<NonNullable<(typeof CAPS)[CapName]["var"]>, string>>;


/** One var's value: a whole number clamped into the row's range; null when unset or not a whole number. */
export function capValue(row: CapRow, raw: unknown): number | null {
  if (typeof raw !== "string" || !/^\s*\d+\s*$/.test(raw)) return null;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) return row.max;
  return Math.min(row.max, Math.max(row.min, n));
}

/** The caps from the Worker's vars (module doc: unset or invalid → default; out of range → clamped). */
export function capsFrom(env: object): Caps {
  const out: Record<string, number> = {};
  for (const [name, row] of Object.entries(CAPS) as [CapName, CapRow][]) {
    out[name] = (row.var === null ? null : capValue(row, Reflect.get(env, row.var))) ?? row.default;
  }
  return out as Caps;
}

/** How a refusal names a cap: `the cap of 16 (AJET_MAX_SWARMS, at most 64)` or `the cap of 64` for a fixed one. */
export function capText(name: CapName, caps: Caps): string {
  const row: CapRow = CAPS[name];
  return row.var === null ? `the cap of ${caps[name]}` : `the cap of ${caps[name]} (${row.var}, at most ${row.max})`;
}
