/**
 * @module tasks/dataset-spec — the dataset entry a run spec embeds (issue 3 §5): a name (the id namespace), a kind
 * (field map), a split, exactly one source (url, path, inline tasks, or the Countdown generator) and a weight.
 */
import { z } from "zod";
import { AnswerReader } from "../rewards/index.ts";
import { CountdownGeneratorSettings } from "./countdown-generator.ts";
import { DatasetKind } from "./field-maps.ts";
import { DEFAULT_SPLIT, TaskIdPart } from "./task-id.ts";

const SOURCES = ["url", "path", "tasks", "generate"] as const;

/**
 * One dataset of a run.
 * - `name`: the id namespace (`gsm8k` → `gsm8k:test:17`); `split` defaults to `train`.
 * - `url`: an http(s) JSONL file (read with `fetch`, works in workerd). `path`: a local JSONL file (Node only).
 *   `tasks`: inline rows in the kind's columns. `generate`: the Countdown generator (kind `countdown` only;
 *   ids `<name>:gen-<seed>:<i>`, `split` ignored).
 * - `weight`: the dataset's share when a run mixes several (default 1, relative).
 * - `answerReaders`: how a math function reads answers to these tasks (`boxed`, `hash` = `#### N`, `final-answer`,
 *   `final-number` = a prose answer's one stated number); carried on each task as `metadata.answer_readers`.
 *   Default: the function's choice for the task (the math agent: box and `#### N` for GSM8K, else the box).
 */
export const DatasetSpec = z
  .strictObject({
    name: TaskIdPart,
    kind: DatasetKind,
    split: TaskIdPart.optional(),
    url: z.url({ protocol: /^https?$/, error: "url must be an http(s) URL of a JSONL file" }).optional(),
    path: z.string().min(1).optional(),
    tasks: z.array(z.record(z.string(), z.unknown())).min(1).optional(),
    generate: CountdownGeneratorSettings.optional(),
    weight: z.number().positive().finite().default(1),
    answerReaders: z
      .array(z.enum(AnswerReader.options, {
        error: (issue) => `unknown answer reader ${JSON.stringify(issue.input)}; use ${AnswerReader.options.join(", ")}`,
      }), { error: `answerReaders must be a list of ${AnswerReader.options.join(", ")}` })
      .min(1, { error: 'answerReaders needs at least one reader, e.g. ["boxed", "hash"]' })
      .optional(),
  })
  .superRefine(checkDatasetSource);

/**
 * The cross-field rules of a dataset entry: exactly one source, and `generate` only with kind `countdown`. Exported
 * so the run request's dataset entry (the reader's fields plus the scheduler's) applies the same rules.
 */
export function checkDatasetSource(spec: { kind: string } & Partial<Record<(typeof SOURCES)[number], unknown>>, ctx: z.RefinementCtx): void {
  const given = SOURCES.filter((k) => spec[k] !== undefined);
  if (given.length !== 1) {
    ctx.addIssue({
      code: "custom",
      path: given.length ? [given[1]!] : ["url"],
      message: `give exactly one of url, path, tasks, generate (got ${given.length ? given.join(", ") : "none"})`,
    });
  }
  if (spec.generate !== undefined && spec.kind !== "countdown") {
    ctx.addIssue({ code: "custom", path: ["generate"], message: 'generate needs kind "countdown"' });
  }
}
export type DatasetSpec = z.input<typeof DatasetSpec>;
export type ParsedDatasetSpec = z.output<typeof DatasetSpec>;

/** The id namespace a dataset's tasks share: `<name>:<split>` (`<name>:gen-<seed>` for the generator). */
export function datasetNamespace(spec: ParsedDatasetSpec): string {
  return spec.generate ? `${spec.name}:gen-${spec.generate.seed}` : `${spec.name}:${spec.split ?? DEFAULT_SPLIT}`;
}

/**
 * The datasets of one run: at least one, and no two sharing an id namespace (BC-30: GSM8K row 0 and Countdown
 * row 0 must never land in one task group).
 */
export const DatasetSpecs = z
  .array(DatasetSpec)
  .min(1)
  .superRefine((specs, ctx) => {
    const seen = new Map<string, number>();
    specs.forEach((spec, i) => {
      const ns = datasetNamespace(spec);
      const first = seen.get(ns);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [i, "name"],
          message:
            `datasets ${first} and ${i} share the task-id namespace "${ns}"; ` +
            "give them different names or splits",
        });
      }
      seen.set(ns, i);
    });
  });
