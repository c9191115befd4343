/**
 * @module cli/dev/options — the run flags `ajet-edge dev` and `ajet-edge run` share (declared once on commander:
 * the parse, the help and the suggestions), checked with zod; every error names the flag and the fix. Defaults are
 * the `npm start` run: Countdown from generated tasks, batch 8 × num_repeat 4, 3 training steps, against the local
 * emulator. `dev` adds `--persist`; `run` adds `--worker` and `--token`.
 */
import type { Command } from "commander";
import { z } from "zod";
import { collect, parseFlags } from "../args.ts";
import { AnswerReader } from "../../rewards/index.ts";
import { DatasetKind, DatasetUrl } from "../../tasks/index.ts";
import { CliError } from "../command.ts";
import { placeholderTokenReason } from "../../util/placeholder-token.ts";

/** A swarm server given on the command line. */
export interface SwarmArg {
  name: string;
  url: string;
}

/**
 * One `--dataset SOURCE[:WEIGHT]`: a JSONL file (read here, sent inline) or a dataset URL (`http(s)://…`,
 * `r2://BUCKET/KEY`: the Worker reads it), and its share of every batch window.
 */
export interface DatasetArg {
  source: string;
  /** the source is a URL the Worker reads (the CLI does not) */
  url: boolean;
  /** relative share of every window (default 1) */
  weight?: number;
  /** `--throttle-ratio NAME=R`: at most ceil(batchSize × R) tasks of this dataset per window */
  throttleRatio?: number;
  /** the dataset's name in the run (its task-id namespace): the kind, then `KIND-2`, `KIND-3` … for more of one kind */
  name: string;
}

/** The parsed options of `ajet-edge dev` / `ajet-edge run`. Durations carry their unit in the name. */
export interface DevOptions {
  function: string;
  /** `--dataset` in the order given; empty = generated Countdown tasks (or the function's demo tasks) */
  datasets: DatasetArg[];
  kind: DatasetKind;
  /** the datasets' answer readers (`answerReaders` of each dataset entry); absent = the function's default */
  answerReaders?: AnswerReader[];
  limit?: number;
  steps: number;
  batchSize: number;
  numRepeat: number;
  maxEnvWorker: number;
  seed: number;
  episodeType: "train" | "eval";
  /** external swarm servers; empty = start the local emulator */
  swarms: SwarmArg[];
  startEngine: boolean;
  timeoutSeconds: number;
  /** how long one request to the Worker may take, seconds (`--request-timeout`, default 30) */
  requestTimeoutSeconds: number;
  json: boolean;
  /** `--sandbox`: the run gets a `sandbox` block (also when the function declares `sandbox: true`) */
  sandbox: boolean;
  /** `--spec FILE`: the whole `POST /runs` body from a YAML or JSON file (the run flags above then stay unset) */
  specPath?: string;
  /** the Worker's console lines shown (`dev --log-level`): debug, info (the functions' ctx.log.info), warn, error; `run` sees no Worker lines */
  logLevel: "debug" | "info" | "warn" | "error";
}

/** `ajet-edge dev` only: where the local Worker keeps its state (`--persist DIR`), so a later dev resumes the run. */
export interface DevOnlyOptions {
  persistDir?: string;
  /** `--exit`: end with the run even at a terminal (by default dev keeps the Worker and the dashboard up until Ctrl-C) */
  exit?: boolean;
}

/** `ajet-edge run` only: the Worker and its API token. */
export interface WorkerOptions {
  /** base URL without a trailing slash */
  workerUrl: string;
  /** `--token`, else `AJET_API_TOKEN`; absent when neither is set (the API then answers 401) */
  token?: string;
  /** false with `--no-swarm-check`: the servers are not checked from this machine (only the Worker reaches them) */
  swarmCheck?: boolean;
}

const count = (flag: string, example: string) =>
  z.coerce.number({ error: `--${flag} must be a number, e.g. ${example}` })
    .int({ error: `--${flag} must be a whole number, e.g. ${example}` })
    .min(1, { error: `--${flag} must be ≥ 1, e.g. ${example}` });

const httpUrl = (flag: string, example = "http://127.0.0.1:10086") =>
  z.url({ protocol: /^https?$/, error: `${flag} must be an http(s) URL, e.g. ${example}` }).transform((u) => u.replace(/\/+$/, ""));

const SwarmPair = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*=.+$/, { error: "--swarm must be NAME=URL, e.g. --swarm judge=http://127.0.0.1:10087" })
  .transform((s) => ({ name: s.slice(0, s.indexOf("=")), url: s.slice(s.indexOf("=") + 1) }))
  .pipe(z.object({ name: z.string(), url: httpUrl("--swarm URL") }));

/**
 * Splits `SOURCE[:WEIGHT]`: a trailing `:NUMBER` is the weight, unless it is the port of a bare URL
 * (`http://host:8080`). @returns the source and the weight text (undefined when none)
 */
export function splitDatasetArg(arg: string): { source: string; weight?: string } {
  const m = /^(.+):([^:/\\]*)$/.exec(arg);
  if (!m) return { source: arg };
  const [, source, weight] = m as unknown as [string, string, string];
  // `http://host:8080` (a port, not a weight) and `C:file` (a drive letter) keep their colon
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/]*$/i.test(source) || /^[a-z]$/i.test(source)) return { source: arg };
  return { source, weight };
}

const DatasetFlag = z
  .string()
  .min(1, { error: "--dataset needs a path to a JSONL file or a dataset URL, e.g. --dataset gsm8k.jsonl or --dataset gsm8k.jsonl:2" })
  .transform((arg, ctx) => {
    const { source, weight } = splitDatasetArg(arg);
    if (weight === undefined) return { source };
    const w = Number(weight);
    if (weight === "" || !Number.isFinite(w) || w <= 0) {
      ctx.addIssue({ code: "custom", message: `--dataset ${arg}: the weight after ':' must be a number > 0 (the dataset's share of every window), e.g. ${source}:2` });
      return z.NEVER;
    }
    return { source, weight: w };
  });

const ThrottleFlag = z
  .string()
  .transform((arg, ctx) => {
    const at = arg.lastIndexOf("=");
    const ratio = Number(arg.slice(at + 1));
    if (at <= 0 || arg.slice(at + 1) === "" || !Number.isFinite(ratio) || ratio <= 0 || ratio > 2) {
      ctx.addIssue({ code: "custom", message: `--throttle-ratio must be NAME=R with R in (0, 2], the dataset's cap as a fraction of the batch size (e.g. gsm8k=0.5), got '${arg}'` });
      return z.NEVER;
    }
    return { name: arg.slice(0, at), ratio };
  });

/** The dataset kind a shipped function reads when `--kind` is not given. */
export const FUNCTION_KIND: Readonly<Record<string, DatasetKind>> = { "math-agent": "gsm8k", "code-agent": "gsm8k", countdown: "countdown" };

const Flags = z.object({
  function: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, { error: "--function must be a function name like math-agent" }).optional(),
  dataset: z.array(DatasetFlag).default([]),
  throttleRatio: z.array(ThrottleFlag).default([]),
  kind: z.enum(DatasetKind.options, { error: `--kind must be one of ${DatasetKind.options.join(", ")}` }).optional(),
  answerReaders: z
    .string()
    .transform((s) => s.split(",").map((r) => r.trim()).filter((r) => r !== ""))
    .pipe(z.array(z.enum(AnswerReader.options, {
      error: (issue) => `--answer-readers: unknown reader ${JSON.stringify(issue.input)}; give a comma-separated list of ${AnswerReader.options.join(", ")}`,
    }))
      .min(1, { error: "--answer-readers needs at least one reader, e.g. boxed,hash" }))
    .optional(),
  limit: count("limit", "16").optional(),
  steps: count("steps", "3").optional(),
  batchSize: count("batch-size", "8").optional(),
  numRepeat: count("num-repeat", "4").optional(),
  maxEnvWorker: count("max-env-worker", "32").optional(),
  seed: z.coerce.number({ error: "--seed must be a number, e.g. 1" }).int({ error: "--seed must be a whole number, e.g. 1" })
    .min(0, { error: "--seed must be ≥ 0, e.g. 1" }).max(2 ** 32 - 1, { error: "--seed must be < 2^32" }).optional(),
  episodeType: z.enum(["train", "eval"], { error: "--episode-type must be train or eval" }).optional(),
  swarmUrl: httpUrl("--swarm-url").optional(),
  swarm: z.array(SwarmPair).default([]),
  startEngine: z.boolean().default(true),
  timeout: z.coerce.number({ error: "--timeout must be a number of seconds, e.g. 300" })
    .positive({ error: "--timeout must be > 0 seconds, e.g. 300" }).default(300),
  requestTimeout: z.coerce.number({ error: "--request-timeout must be a number of seconds, e.g. 30" })
    .positive({ error: "--request-timeout must be > 0 seconds, e.g. 30" }).default(30),
  json: z.boolean().default(false),
  sandbox: z.boolean().default(false),
  spec: z.string().min(1, { error: "--spec needs the path of a YAML or JSON run spec" }).optional(),
  logLevel: z.enum(["debug", "info", "warn", "error"], { error: "--log-level must be debug, info, warn or error, e.g. --log-level info" }).default("warn"),
});

/** Run flags that `--spec` replaces, with the spec field to set instead. */
const SPEC_FIELDS: ReadonlyArray<[keyof z.output<typeof Flags>, string, string]> = [
  ["function", "--function", "function"], ["dataset", "--dataset", "datasets"], ["throttleRatio", "--throttle-ratio", "datasets[].throttleRatio"],
  ["kind", "--kind", "datasets[].kind"], ["answerReaders", "--answer-readers", "datasets[].answerReaders"], ["limit", "--limit", "datasets[].tasks"],
  ["steps", "--steps", "maxSteps"], ["batchSize", "--batch-size", "job.batchSize"], ["numRepeat", "--num-repeat", "job.numRepeat"],
  ["maxEnvWorker", "--max-env-worker", "job.maxEnvWorker"], ["seed", "--seed", "seed"], ["episodeType", "--episode-type", "episodeType"],
  ["sandbox", "--sandbox", "sandbox"],
];

/**
 * Declares the run flags (shared by `dev` and `run`) on a commander command; the help is generated from these.
 * @param local `dev`: the defaults name the local emulator and `--persist` is added; `run`: `--worker`/`--token`
 */
export function defineRunFlags(cmd: Command, local: boolean): void {
  cmd
    .option("--spec <file>", "the whole POST /runs body from a YAML or JSON file (the run flags below then stay unset)")
    .option("--function <name>", "rollout function (default countdown; math-agent when --kind is gsm8k or math)")
    .option("--dataset <source[:weight]>", "tasks from a JSONL file (sent inline) or a JSONL/Parquet URL the Worker reads row by row (http(s)://… with Range support, r2://BUCKET/KEY); repeat to mix several, each with its weight (default: generated Countdown tasks)", collect)
    .option("--throttle-ratio <name=r>", "cap dataset NAME at ceil(batch size × r) tasks per step, 0 < r ≤ 2 (repeatable; names: the kind, then KIND-2 …)", collect)
    .option("--kind <kind>", `the files' columns: ${DatasetKind.options.join(" | ")} (default from --function: math-agent → gsm8k, countdown → countdown, else generic)`)
    .option("--answer-readers <list>", `how math answers are read, comma-separated: ${AnswerReader.options.join(",")} (default: the function's)`)
    .option("--limit <n>", "tasks to send from each --dataset file (default 2 × batch size × steps)")
    .option("--steps <n>", "training steps to run (default 3)")
    .option("--batch-size <n>", "tasks per training step (default 8)")
    .option("--num-repeat <n>", "episodes per task, the GRPO group (default 4)")
    .option("--max-env-worker <n>", "engine worker threads (default batch size × num repeat)")
    .option("--seed <n>", "seeds the generated tasks, the run and the simulated policy (default 1)")
    .option("--episode-type <type>", "train (default) | eval (no training: every task scored once per repeat)")
    .option("--swarm-url <url>", local ? "use this swarm server (e.g. http://HOST:10086) instead of starting the emulator" : "the swarm server the Worker connects to (e.g. http://HOST:10086)")
    .option("--swarm <name=url>", "a named swarm server, for multi-swarm functions (repeatable)", collect)
    .option("--no-start-engine", "do not sync the job or start an OFFLINE engine: the run waits for it to be ROLLING")
    .option("--sandbox", local ? "give the run's episodes sandboxes (its sandbox block) and start the local sandbox server (default for a function that declares sandbox: true)" : "give the run's episodes sandboxes (its sandbox block; default for a function that declares sandbox: true)")
    .option("--timeout <seconds>", "give up (drain the run, exit 1) after this long (default 300)")
    .option("--request-timeout <seconds>", "how long one request to the Worker may take before it counts as unanswered (default 30)")
    .option("--json", "print one JSON document on stdout in every outcome: the summary, or {error, exitCode …} on failure (progress goes to stderr)");
  cmd.addHelpText("after", "\nCtrl-C stops cleanly: the run drains (nothing left claimed); exit code 130. A second Ctrl-C quits at once.");
}

/**
 * Checks the run flags' values (commander's `opts()`).
 * @returns the options
 * @throws CliError (exit code 2) naming the flag and the fix
 */
export function runOptionsFrom(values: Record<string, unknown>, local: boolean): DevOptions {
  const parsed = Flags.safeParse(values);
  if (!parsed.success) throw new CliError(parsed.error.issues.map((i) => i.message).join("\n"));
  const f = parsed.data;
  if (f.swarmUrl && f.swarm.length) throw new CliError("give either --swarm-url (one server) or --swarm NAME=URL (several), not both");
  if (local && !f.startEngine && !f.swarmUrl && !f.swarm.length) {
    throw new CliError("--no-start-engine needs --swarm-url: the local emulator's engine is always started");
  }
  if (!local && !f.swarmUrl && !f.swarm.length && !f.spec) {
    throw new CliError("the Worker needs a swarm server: give --swarm-url http://HOST:10086 (or --swarm NAME=URL, or --spec FILE with swarms)");
  }
  if (f.spec) {
    const mixed = SPEC_FIELDS.filter(([key]) => values[key] !== undefined && !(Array.isArray(values[key]) && (values[key] as unknown[]).length === 0));
    if (mixed.length) {
      throw new CliError(`--spec gives the whole run: set ${mixed.map(([, , field]) => field).join(", ")} in ${f.spec} instead of ${mixed.map(([, flag]) => flag).join(", ")}`);
    }
  }
  if (f.limit !== undefined && !f.dataset.length) throw new CliError("--limit applies to --dataset; the generated Countdown tasks are sized from the run");
  const fn = f.function ?? (f.kind === "gsm8k" || f.kind === "math" ? "math-agent" : "countdown");
  const kind = f.kind ?? FUNCTION_KIND[fn] ?? "generic";
  const datasets: DatasetArg[] = f.dataset.map((d, i) => ({ ...d, url: /^[a-z][a-z0-9+.-]*:\/\//i.test(d.source), name: i === 0 ? kind : `${kind}-${i + 1}` }));
  for (const d of datasets.filter((x) => x.url)) {
    const checked = DatasetUrl.safeParse(d.source);
    if (!checked.success) throw new CliError(`--dataset ${d.source}: ${checked.error.issues[0]!.message}`);
  }
  if (f.limit !== undefined && datasets.every((d) => d.url)) {
    throw new CliError("--limit applies to a --dataset file; the Worker reads a dataset URL whole (use a smaller file, or --steps)");
  }
  for (const t of f.throttleRatio) {
    const d = datasets.find((x) => x.name === t.name);
    if (!d) {
      throw new CliError(datasets.length
        ? `--throttle-ratio ${t.name}=${t.ratio}: no dataset named ${t.name}; the datasets are ${datasets.map((x) => `${x.name} (${x.source})`).join(", ")}`
        : "--throttle-ratio applies to --dataset; give the datasets first");
    }
    d.throttleRatio = t.ratio;
  }
  const batchSize = f.batchSize ?? 8;
  const numRepeat = f.numRepeat ?? 4;
  return {
    function: fn,
    datasets,
    kind,
    ...(f.answerReaders ? { answerReaders: f.answerReaders } : {}),
    ...(f.limit !== undefined ? { limit: f.limit } : {}),
    steps: f.steps ?? 3,
    batchSize,
    numRepeat,
    maxEnvWorker: f.maxEnvWorker ?? batchSize * numRepeat,
    seed: f.seed ?? 1,
    episodeType: f.episodeType ?? "train",
    swarms: f.swarmUrl ? [{ name: "default", url: f.swarmUrl }] : f.swarm,
    startEngine: f.startEngine,
    timeoutSeconds: f.timeout,
    requestTimeoutSeconds: f.requestTimeout,
    json: f.json,
    sandbox: f.sandbox,
    logLevel: f.logLevel,
    ...(f.spec ? { specPath: f.spec } : {}),
  };
}

/** The `ajet-edge dev` flags: the run flags and `--persist DIR`. */
export function defineDevFlags(cmd: Command): void {
  cmd.description(
    "Runs a rollout end to end on this machine: a swarm server (the local emulator, or --swarm-url), the Worker in local " +
      "workerd (scheduler Durable Object, episode queue, rollout function), then the same client as `ajet-edge run`: " +
      "live progress and a per-step summary. npm start = ajet-edge dev.",
  );
  defineRunFlags(cmd, true);
  cmd.option("--log-level <level>", "the Worker's log lines shown, functions' ctx.log included: debug, info, warn (default), error");
  cmd.option("--persist <dir>", "keep the local Worker's state in DIR (default: a temp dir, deleted); a later dev --persist DIR resumes its unfinished run");
  cmd.option("--exit", "end when the run ends; by default, at a terminal, the Worker and the dashboard stay up until Ctrl-C (in scripts, CI and with --json dev always ends with the run)");
}

/**
 * Parses `ajet-edge dev` arguments.
 * @returns the options, or null for `--help`
 * @throws CliError (exit code 2) naming the flag and the fix
 */
export function parseDevArgs(argv: readonly string[]): (DevOptions & DevOnlyOptions) | null {
  const flags = parseFlags("dev", defineDevFlags, argv);
  if (!flags) return null;
  const options = runOptionsFrom(flags.values, true);
  const persist = flags.values["persist"];
  if (typeof persist === "string" && persist === "") throw new CliError("--persist needs a directory, e.g. --persist .ajet/dev");
  return { ...options, ...(typeof persist === "string" ? { persistDir: persist } : {}), ...(flags.values["exit"] === true ? { exit: true } : {}) };
}

/** The `ajet-edge run` flags: `--worker URL`, `--token`, and the run flags. */
export function defineRunCommandFlags(cmd: Command): void {
  cmd.description(
    "Creates a run on a deployed or `wrangler dev` Worker and follows it: the same flags, live progress, summary, " +
      "--json and exit codes as `ajet-edge dev`, against --worker URL and the swarm servers you name.",
  );
  cmd.requiredOption("--worker <url>", "the Worker's base URL, e.g. https://ajet-edge.ACCOUNT.workers.dev or http://127.0.0.1:8787");
  defineTokenFlag(cmd);
  defineRunFlags(cmd, false);
  cmd.option("--no-swarm-check", "do not check the swarm servers from this machine before creating the run (when only the Worker can reach them)");
}

/** `--token` (every command that talks to a Worker). */
export function defineTokenFlag(cmd: Command): void {
  cmd.option("--token <token>", "the Worker's API token (default: the AJET_API_TOKEN environment variable)");
}

/**
 * Checks `--worker` and `--token` (default `AJET_API_TOKEN`).
 * @throws CliError naming the flag
 */
export function workerOptionsFrom(values: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): WorkerOptions {
  const url = httpUrl("--worker", "http://127.0.0.1:8787").safeParse(values["worker"]);
  if (!url.success) throw new CliError(url.error.issues[0]!.message);
  const given = typeof values["token"] === "string";
  const token = given ? (values["token"] as string) : env["AJET_API_TOKEN"];
  if (token === "") throw new CliError("--token is empty; give the Worker's API token (or set AJET_API_TOKEN)");
  const placeholder = token === undefined ? null : placeholderTokenReason(token);
  if (placeholder) {
    throw new CliError(
      `${given ? "--token" : "AJET_API_TOKEN"} is not a real token (${placeholder}); give the token the Worker was given ` +
        "(wrangler secret put AJET_API_TOKEN, or .dev.vars for wrangler dev), made with e.g. `openssl rand -hex 32`",
    );
  }
  return { workerUrl: url.data, ...(token ? { token } : {}) };
}

/**
 * Parses `ajet-edge run` arguments.
 * @returns the options, or null for `--help`
 * @throws CliError (exit code 2) naming the flag and the fix
 */
export function parseRunArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): (DevOptions & WorkerOptions) | null {
  const flags = parseFlags("run", defineRunCommandFlags, argv);
  if (!flags) return null;
  return { ...runOptionsFrom(flags.values, false), ...workerOptionsFrom(flags.values, env), ...(flags.values["swarmCheck"] === false ? { swarmCheck: false } : {}) };
}
