/**
 * @module cli/dev/options — `ajet-edge dev` arguments (issue 3 §6): parsed with `node:util` parseArgs, checked with
 * zod; every error names the flag and the fix. Defaults are the `npm start` run: Countdown from generated tasks,
 * batch 8 × num_repeat 4, 3 training steps, against the local emulator.
 */
import { parseFlags } from "../args.ts";
import { z } from "zod";
import { AnswerReader } from "../../rewards/index.ts";
import { DatasetKind } from "../../tasks/index.ts";
import { CliError } from "../command.ts";

/** The command's help text. */
export const DEV_USAGE = [
  "usage: ajet-edge dev [options]        (npm start = ajet-edge dev)",
  "",
  "Runs a rollout end to end on this machine: a swarm server (the local emulator, or --swarm-url), the Worker in",
  "local workerd (scheduler Durable Object, episode queue, rollout function), a synced job and a started engine;",
  "shows live progress and ends with a per-step summary.",
  "",
  "options:",
  "  --function NAME        rollout function (default countdown; math-agent when --kind is gsm8k or math)",
  "  --dataset PATH.jsonl   tasks from a JSONL file, sent inline to the Worker (default: generated Countdown tasks)",
  "  --kind KIND            the file's columns: gsm8k | math | countdown | generic (default from --function:",
  "                         math-agent → gsm8k, countdown → countdown, else generic)",
  "  --answer-readers LIST  how math answers are read: boxed,hash,final-answer,final-number (comma-separated;",
  "                         default: the function's, for math-agent boxed + hash (#### N) on GSM8K, else boxed)",
  "  --limit N              tasks to send from --dataset (default 2 × batch size × steps)",
  "  --steps N              training steps to run (default 3)",
  "  --batch-size N         tasks per training step (default 8)",
  "  --num-repeat N         episodes per task, the GRPO group (default 4)",
  "  --max-env-worker N     engine worker threads (default batch size × num repeat)",
  "  --seed N               seeds the generated tasks, the run and the simulated policy (default 1)",
  "  --episode-type TYPE    train (default) | eval (no training: every task scored once per repeat)",
  "  --swarm-url URL        use this swarm server (e.g. http://HOST:10086) instead of starting the emulator",
  "  --swarm NAME=URL       a named swarm server, for multi-swarm functions (repeatable)",
  "  --no-start-engine      with --swarm-url: do not sync the job or start the engine (it must be ROLLING)",
  "  --timeout SECONDS      give up (drain the run, exit 1) after this long (default 300)",
  "  --json                 print the final summary as JSON on stdout (progress goes to stderr)",
  "  -h, --help             show this help",
  "",
  "Ctrl-C stops cleanly: the run drains (nothing left claimed), workerd and the emulator stop; exit code 130.",
].join("\n");

/** A swarm server given on the command line. */
export interface SwarmArg {
  name: string;
  url: string;
}

/** The parsed options of `ajet-edge dev`. Durations carry their unit in the name. */
export interface DevOptions {
  function: string;
  datasetPath?: string;
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
  json: boolean;
}

const count = (flag: string, example: string) =>
  z.coerce.number({ error: `--${flag} must be a number, e.g. ${example}` })
    .int({ error: `--${flag} must be a whole number, e.g. ${example}` })
    .min(1, { error: `--${flag} must be ≥ 1, e.g. ${example}` });

const httpUrl = (flag: string) =>
  z.url({ protocol: /^https?$/, error: `${flag} must be an http(s) URL, e.g. http://127.0.0.1:10086` }).transform((u) => u.replace(/\/+$/, ""));

const SwarmPair = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*=.+$/, { error: "--swarm must be NAME=URL, e.g. --swarm judge=http://127.0.0.1:10087" })
  .transform((s) => ({ name: s.slice(0, s.indexOf("=")), url: s.slice(s.indexOf("=") + 1) }))
  .pipe(z.object({ name: z.string(), url: httpUrl("--swarm URL") }));

/** The dataset kind a shipped function reads when `--kind` is not given. */
export const FUNCTION_KIND: Readonly<Record<string, DatasetKind>> = { "math-agent": "gsm8k", countdown: "countdown" };

const Flags = z.object({
  function: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, { error: "--function must be a function name like math-agent" }).optional(),
  dataset: z.string().min(1, { error: "--dataset needs a path to a JSONL file" }).optional(),
  kind: z.enum(DatasetKind.options, { error: `--kind must be one of ${DatasetKind.options.join(", ")}` }).optional(),
  "answer-readers": z
    .string()
    .transform((s) => s.split(",").map((r) => r.trim()).filter((r) => r !== ""))
    .pipe(z.array(z.enum(AnswerReader.options, {
      error: (issue) => `--answer-readers: unknown reader ${JSON.stringify(issue.input)}; give a comma-separated list of ${AnswerReader.options.join(", ")}`,
    }))
      .min(1, { error: "--answer-readers needs at least one reader, e.g. boxed,hash" }))
    .optional(),
  limit: count("limit", "16").optional(),
  steps: count("steps", "3").default(3),
  "batch-size": count("batch-size", "8").default(8),
  "num-repeat": count("num-repeat", "4").default(4),
  "max-env-worker": count("max-env-worker", "32").optional(),
  seed: z.coerce.number({ error: "--seed must be a number, e.g. 1" }).int({ error: "--seed must be a whole number, e.g. 1" })
    .min(0, { error: "--seed must be ≥ 0, e.g. 1" }).max(2 ** 32 - 1, { error: "--seed must be < 2^32" }).default(1),
  "episode-type": z.enum(["train", "eval"], { error: "--episode-type must be train or eval" }).default("train"),
  "swarm-url": httpUrl("--swarm-url").optional(),
  swarm: z.array(SwarmPair).default([]),
  "no-start-engine": z.boolean().default(false),
  timeout: z.coerce.number({ error: "--timeout must be a number of seconds, e.g. 300" })
    .positive({ error: "--timeout must be > 0 seconds, e.g. 300" }).default(300),
  json: z.boolean().default(false),
});

/**
 * Parses `ajet-edge dev` arguments.
 * @returns the options, or null for `--help`
 * @throws CliError (exit code 2) naming the flag and the fix
 */
export function parseDevArgs(argv: string[]): DevOptions | null {
  const flags = parseFlags(argv, {
    function: { type: "string" }, dataset: { type: "string" }, kind: { type: "string" }, "answer-readers": { type: "string" }, limit: { type: "string" },
    steps: { type: "string" }, "batch-size": { type: "string" }, "num-repeat": { type: "string" },
    "max-env-worker": { type: "string" }, seed: { type: "string" }, "episode-type": { type: "string" },
    "swarm-url": { type: "string" }, swarm: { type: "string", multiple: true }, "no-start-engine": { type: "boolean" },
    timeout: { type: "string" }, json: { type: "boolean" },
  });
  if (!flags) return null;
  const values = flags.values;
  const parsed = Flags.safeParse(values);
  if (!parsed.success) throw new CliError(parsed.error.issues.map((i) => i.message).join("\n"));
  const f = parsed.data;
  if (f["swarm-url"] && f.swarm.length) throw new CliError("give either --swarm-url (one server) or --swarm NAME=URL (several), not both");
  if (f["no-start-engine"] && !f["swarm-url"] && !f.swarm.length) {
    throw new CliError("--no-start-engine needs --swarm-url: the local emulator's engine is always started");
  }
  if (f.limit !== undefined && !f.dataset) throw new CliError("--limit applies to --dataset; the generated Countdown tasks are sized from the run");
  const fn = f.function ?? (f.kind === "gsm8k" || f.kind === "math" ? "math-agent" : "countdown");
  const kind = f.kind ?? FUNCTION_KIND[fn] ?? "generic";
  return {
    function: fn,
    ...(f.dataset ? { datasetPath: f.dataset } : {}),
    kind,
    ...(f["answer-readers"] ? { answerReaders: f["answer-readers"] } : {}),
    ...(f.limit !== undefined ? { limit: f.limit } : {}),
    steps: f.steps,
    batchSize: f["batch-size"],
    numRepeat: f["num-repeat"],
    maxEnvWorker: f["max-env-worker"] ?? f["batch-size"] * f["num-repeat"],
    seed: f.seed,
    episodeType: f["episode-type"],
    swarms: f["swarm-url"] ? [{ name: "default", url: f["swarm-url"] }] : f.swarm,
    startEngine: !f["no-start-engine"],
    timeoutSeconds: f.timeout,
    json: f.json,
  };
}
