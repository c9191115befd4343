/**
 * @module node/job-file — Node-only file helpers for AgentJetJob: write the job YAML to a path
 * (Python `dump_job_as_yaml(path)`) and build a job from a YAML file (Python `base_yaml_config=<path>`).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { AgentJetJob, AgentJetJobConfigError } from "../job/index.ts";
import type { AgentJetJobDeps, AgentJetJobOptions } from "../job/index.ts";

/**
 * Writes `job.toYaml()` to `path` (UTF-8), creating parent directories.
 * @returns the path written.
 */
export async function writeJobYaml(job: AgentJetJob, path: string): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, job.toYaml(), "utf8");
  return path;
}

/**
 * Builds a job with the YAML file at `path` as its base, then applies `options`.
 * @throws AgentJetJobConfigError `Configuration yaml is absent! <path>` (the Python job's message) when the file
 *   does not exist, or any construction error of AgentJetJob.
 */
export async function readJobYamlFile(
  path: string,
  options: Omit<AgentJetJobOptions, "baseYaml"> = {},
  deps?: AgentJetJobDeps,
): Promise<AgentJetJob> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new AgentJetJobConfigError(`Configuration yaml is absent! ${path}`, { code: "invalid_yaml" });
    }
    throw err;
  }
  return AgentJetJob.fromYaml(text, options, deps);
}
