/**
 * @module edge/run/dataset-changes — a dataset whose file changed under its run (tasks/load `DatasetChangedError`)
 * fails the run after a bounded number of confirmations, instead of the dispatch retrying for ever (issue 18).
 */
import type { EpisodeDispatch } from "../../scheduler/index.ts";
import type { DatasetReadFailure } from "./datasets.ts";
import type { SchedulerStorage } from "./storage.ts";
import type { RunLog } from "../ground/log.ts";

/**
 * Dispatch passes that must find a dataset's file changed before the run fails: one could be a glitch of a cache in
 * front of the host; three, each after the scheduler's back-off, are not.
 */
export const DATASET_CHANGE_CONFIRMATIONS = 3;

/** What the check needs of the run's command runner (edge/run/command-runner `CommandRunnerHost`). */
export interface DatasetChangeHost {
  storage: SchedulerStorage;
  log: RunLog;
  fail(reason: string, inline: boolean): Promise<void>;
}

/**
 * Confirms, once per dispatch pass, each dataset whose file changed under the run; at
 * {@link DATASET_CHANGE_CONFIRMATIONS} the run fails naming the dataset and the row. No row of the new file is ever
 * used (the read refused it).
 * @param unread the pass's failed reads (`source#index` → failure), from `RunDatasets.ensure`
 */
export async function confirmDatasetChanges(host: DatasetChangeHost, episodes: readonly EpisodeDispatch[], unread: ReadonlyMap<string, DatasetReadFailure>, inline: boolean): Promise<void> {
  const changed = new Map<string, string>();
  for (const d of episodes) {
    const failure = unread.get(`${d.source}#${d.taskIndex}`);
    if (failure?.changed && !changed.has(d.source)) changed.set(d.source, failure.message);
  }
  for (const [source, message] of changed) {
    const seen = host.storage.confirmDatasetChange(source);
    host.log("warn", `dataset "${source}" changed under the run (${seen} of ${DATASET_CHANGE_CONFIRMATIONS} confirmations)`, { source, error: message });
    if (seen >= DATASET_CHANGE_CONFIRMATIONS) return host.fail(`dataset "${source}" changed during the run: ${message}`, inline);
  }
}
