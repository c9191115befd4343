/**
 * @module edge/api/run-request — the `POST /runs` body as one schema: the scheduler's run spec (scheduler/run-spec)
 * whose dataset entries are the dataset reader's entry (tasks/dataset-spec: name, kind, split, one source) plus the
 * scheduler's fields (weight, throttleRatio). The Worker parses a request with it once; the CLI builds its
 * requests against the same types.
 */
import type { z } from "zod";
import { DatasetRef, parseWith, runSpecSchema, type RunSpecIssue } from "../../scheduler/index.ts";
import { DatasetSpec } from "../../tasks/index.ts";

/**
 * One `datasets[]` entry of a request: the reader's fields and rules (exactly one source, strict keys), the
 * scheduler's `weight` and `throttleRatio`, and a name valid for both (an episode key part and a task-id part). A
 * file `path` only works from the CLI, which inlines the file: the Worker refuses it.
 */
export const RunDataset = DatasetSpec.safeExtend({
  name: DatasetRef.shape.name.pipe(DatasetSpec.shape.name),
  weight: DatasetRef.shape.weight,
  throttleRatio: DatasetRef.shape.throttleRatio,
}).superRefine((entry, ctx) => {
  if (entry.path !== undefined) {
    ctx.addIssue({ code: "custom", path: ["path"], message: "a file path only works from the CLI (it inlines the file); give a url or inline tasks to the Worker" });
  }
});

/** The `POST /runs` body: the run spec over {@link RunDataset} entries, every default resolved. */
export const RunRequest = runSpecSchema(RunDataset);
/** A validated request (a `RunSpec` whose datasets carry their reader fields). */
export type RunRequest = z.output<typeof RunRequest>;
/** What a client may send to `POST /runs`. */
export type RunRequestInput = z.input<typeof RunRequest>;

/**
 * Validates a `POST /runs` body: every problem at once, each with its dotted field path and a message that says the fix.
 * @returns `{ success: true, data }` or `{ success: false, issues }`
 */
export function parseRunRequest(input: unknown): { success: true; data: RunRequest } | { success: false; issues: RunSpecIssue[] } {
  return parseWith(RunRequest, input);
}
