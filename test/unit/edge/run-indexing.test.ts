/**
 * The background creation of a run with large dataset files (edge/run/run-indexing): what `create` answers, what the
 * alarm's pass does with problems, a stop during the pass, and a pass that starts again after a reset.
 */
import { describe, expect, it } from "vitest";
import { beginCreate, finishPendingCreate, PendingRuns, stopPendingCreate, type IndexingHost, type KvLike } from "../../../src/edge/run/run-indexing.ts";
import type { CreateRunInput, RunView } from "../../../src/edge/run/run-views.ts";
import type { Issue } from "../../../src/edge/ground/errors.ts";
import { RunSpec } from "../../../src/scheduler/index.ts";

function memoryKv(): KvLike {
  const m = new Map<string, unknown>();
  return { get: <T>(k: string) => m.get(k) as T | undefined, put: (k: string, v: unknown) => void m.set(k, v), delete: (k: string) => m.delete(k) };
}

const input: CreateRunInput = {
  runId: "run-1",
  spec: RunSpec.parse({ swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "cd", url: "r2://DATASETS/cd.jsonl" }], function: "countdown", batchSize: 2, numRepeat: 2, secrets: { JUDGE_KEY: "s3cret" } }),
  sources: { cd: { type: "file", url: "r2://DATASETS/cd.jsonl", format: "jsonl", options: {} as never } },
  loadReports: {},
  principal: "token-a",
};

/** A host whose inline creation is scripted; records calls. */
function host(files: { bytes: number; issues?: Issue[] }, create: IndexingHost["create"] = async () => ({ view: { phase: "running" } as RunView, issues: [] })) {
  const calls: string[] = [];
  const h: IndexingHost & { calls: string[] } = {
    calls,
    pending: new PendingRuns(memoryKv()),
    statFiles: async () => ({ bytes: files.bytes, files: 1, issues: files.issues ?? [], stage: [] }),
    clearDatasets: () => void calls.push("clearDatasets"),
    clearIndexes: () => void calls.push("clearIndexes"),
    env: { AJET_BACKGROUND_INDEX_BYTES: "1000" },
    wakeNow: async () => void calls.push("wakeNow"),
    create: async (i, wanted) => {
      calls.push("create");
      return create(i, wanted);
    },
    releaseQuota: async () => void calls.push("releaseQuota"),
    dropStaged: (runId) => void calls.push(`dropStaged ${runId}`),
  };
  return h;
}

describe("background indexing of large dataset files", () => {
  it("files at or under AJET_BACKGROUND_INDEX_BYTES are created inline; over it, the answer is the indexing view and the alarm is woken", async () => {
    expect(await beginCreate(input, host({ bytes: 1000 }), 5)).toBeNull();
    const h = host({ bytes: 1001 });
    const answer = await beginCreate(input, h, 5);
    expect(answer?.issues).toEqual([]);
    expect(answer?.view).toMatchObject({ runId: "run-1", phase: "indexing", stopReason: null, createdAtMs: 5, failure: null, datasets: {} });
    expect(h.calls).toEqual(["wakeNow"]);
    // the same create again (a retried POST) answers the same view; another run id is refused
    expect((await beginCreate(input, h, 6))?.view?.phase).toBe("indexing");
    await expect(beginCreate({ ...input, runId: "run-2" }, h, 6)).rejects.toThrow(/already holds run run-1/);
  });

  it("an unreachable file answers its issue at once (400), leaving nothing pending", async () => {
    const h = host({ bytes: 5000, issues: [{ code: "invalid", path: "datasets.0", message: "dataset r2://DATASETS/cd.jsonl does not exist" }] });
    expect(await beginCreate(input, h, 5)).toEqual({ view: null, issues: [{ code: "invalid", path: "datasets.0", message: "dataset r2://DATASETS/cd.jsonl does not exist" }] });
    expect(h.pending.get()).toBeNull();
    expect(h.calls).toEqual(["clearDatasets"]);
  });

  it("the alarm's pass creates the run and forgets the pending record; a pass with problems fails the run, naming them, and frees its quota slot", async () => {
    const ok = host({ bytes: 5000 });
    await beginCreate(input, ok, 5);
    await finishPendingCreate(ok, () => 9);
    expect(ok.pending.get()).toBeNull();
    expect(ok.calls).toEqual(["wakeNow", "clearIndexes", "create"]);

    const bad = host({ bytes: 5000 }, async () => ({ view: null, issues: [{ code: "invalid", path: "datasets.0", message: 'dataset "cd" has no usable task' }] }));
    await beginCreate(input, bad, 5);
    await finishPendingCreate(bad, () => 9);
    expect(bad.pending.get()?.failure).toEqual({ message: `the run's datasets could not be used: datasets.0: dataset "cd" has no usable task`, issues: [{ code: "invalid", path: "datasets.0", message: 'dataset "cd" has no usable task' }], atMs: 9, stopped: false });
    expect(bad.calls.filter((c) => c === "releaseQuota")).toHaveLength(1);
    expect(bad.pending.get()?.input.spec.secrets).toEqual({}); // a run that never starts keeps no secret
    await finishPendingCreate(bad, () => 10); // a failed creation is not tried again
    expect(bad.calls.filter((c) => c === "create")).toHaveLength(1);
  });

  it("a stop during the pass: the pass is told not to store the run, the view says stopped, the quota slot is freed once", async () => {
    let wantedAfterPass: boolean | null = null;
    const h = host({ bytes: 5000 }, async (_i, wanted) => {
      await stopPendingCreate(h, 7); // POST /runs/:id/stop arrives while the file is read
      wantedAfterPass = wanted();
      return { view: null, issues: [] };
    });
    await beginCreate(input, h, 5);
    await finishPendingCreate(h, () => 9);
    expect(wantedAfterPass).toBe(false);
    const view = await stopPendingCreate(h, 11);
    expect(view).toMatchObject({ phase: "finished", stopReason: "stopRequested", failure: "stopped while its datasets were being indexed", totals: { dispatches: 0 } });
    expect(h.calls.filter((c) => c === "releaseQuota")).toHaveLength(1);
  });

  it("an unexpected error in the pass fails the run with its message (never retried with rows already seen)", async () => {
    const h = host({ bytes: 5000 }, async () => {
      throw new Error("storage exploded");
    });
    await beginCreate(input, h, 5);
    await finishPendingCreate(h, () => 9);
    expect(h.pending.get()?.failure?.message).toBe("the run's datasets could not be used: (datasets): storage exploded");
    expect(h.calls).toEqual(["wakeNow", "clearIndexes", "create", "clearDatasets", "releaseQuota"]);
  });

  it("a creation that copies a file into R2: the copy is dropped when the creation fails or is stopped, kept when the run starts", async () => {
    const staged: CreateRunInput = { ...input, sources: { cd: { type: "file", url: "r2://DATASETS/staged/run-1/cd", format: "jsonl", options: {} as never, stageFrom: "http://127.0.0.1:8000/cd.jsonl" } } };
    const ok = host({ bytes: 5000 });
    await beginCreate(staged, ok, 5);
    await finishPendingCreate(ok, () => 9);
    expect(ok.calls).toEqual(["wakeNow", "clearIndexes", "create"]); // the run reads from its copy: kept until it ends

    const bad = host({ bytes: 5000 }, async () => ({ view: null, issues: [{ code: "invalid", path: "datasets.0", message: 'dataset "cd" has no usable task' }] }));
    await beginCreate(staged, bad, 5);
    await finishPendingCreate(bad, () => 9);
    expect(bad.calls).toEqual(["wakeNow", "clearIndexes", "create", "dropStaged run-1", "releaseQuota"]);

    const thrown = host({ bytes: 5000 }, async () => {
      throw new Error("storage exploded");
    });
    await beginCreate(staged, thrown, 5);
    await finishPendingCreate(thrown, () => 9);
    expect(thrown.calls).toContain("dropStaged run-1");

    // stopped while the copy is made: dropped at the stop (a finished copy) and again when the pass ends (one finished after)
    const stopped = host({ bytes: 5000 }, async () => {
      await stopPendingCreate(stopped, 7);
      return { view: null, issues: [] };
    });
    await beginCreate(staged, stopped, 5);
    await finishPendingCreate(stopped, () => 9);
    expect(stopped.calls).toEqual(["wakeNow", "clearIndexes", "create", "releaseQuota", "dropStaged run-1", "dropStaged run-1"]);

    // a creation without copies never asks R2 for anything
    const plain = host({ bytes: 5000 }, async () => ({ view: null, issues: [{ code: "invalid", path: "datasets.0", message: "x" }] }));
    await beginCreate(input, plain, 5);
    await finishPendingCreate(plain, () => 9);
    expect(plain.calls.some((c) => c.startsWith("dropStaged"))).toBe(false);
  });
});
