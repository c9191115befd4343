/**
 * @module test/support/process-memory — the memory of the local workerd (Linux /proc): its current resident set
 * (VmRSS) and its peak over its whole life (VmHWM, the kernel's high-water mark, so no sampling can miss a spike).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Pids of the live `workerd` processes in a process group (the local Worker host's group). */
export function workerdPids(pgid: number): number[] {
  return execFileSync("ps", ["-eo", "pgid=,pid=,stat=,comm="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([group, , stat, comm]) => Number(group) === pgid && comm === "workerd" && stat !== undefined && !stat.startsWith("Z"))
    .map(([, pid]) => Number(pid));
}

/**
 * A process's resident set now and its peak, MiB, and the resident set's parts now: anonymous memory (heaps) and
 * file-backed or shared pages (mapped files, SQLite's shared memory). @throws when /proc has no such process
 */
export function processMemoryMiB(pid: number): { rssMiB: number; peakMiB: number; anonMiB: number; fileMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMiB: kib("VmRSS") / 1024, peakMiB: kib("VmHWM") / 1024, anonMiB: kib("RssAnon") / 1024, fileMiB: (kib("RssFile") + kib("RssShmem")) / 1024 };
}
