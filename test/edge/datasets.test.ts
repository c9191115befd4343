/**
 * Datasets inside workerd: a JSONL file and a Parquet file in R2 (miniflare's, the `DATASETS` binding) are indexed
 * by the run's Durable Object and read row by row as episodes are dispatched, and a run over each trains; inline
 * rows are stored one row per task, never inside the spec (3 MB of rows, over SQLite's 2 MB row limit, is fine);
 * inline rows over their limits answer 413 naming the limit and the alternative; a generated dataset is created at
 * once (tasks are made when needed); nothing is a 500.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { parquetWriteBuffer } from "hyparquet-writer";
import { describe, expect, it } from "vitest";
import { countdownSpec, createRun, DEAD_SWARM, postRun, type stubOf, TestEmulator, untilFinished } from "./support.ts";

/** The task rows the run's SQLite holds (inline rows, or URL rows read so far). */
function storedTasks(stub: ReturnType<typeof stubOf>): Promise<Array<{ task_index: number; task_id: string; body: string }>> {
  return runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ task_index: number; task_id: string; body: string }>("SELECT task_index, task_id, body FROM tasks ORDER BY task_index").toArray());
}

const rows = Array.from({ length: 40 }, (_, i) => ({ target: 24, nums: [2, 3, 4], level: i }));

describe("datasets in R2", () => {
  it("a JSONL file in R2 is indexed by the run and read row by row; the run trains its window", async () => {
    const lines = rows.map((r) => JSON.stringify(r));
    lines.splice(5, 0, '{"target": "not a number", "nums": [1]}');
    await env.DATASETS!.put("cd/train.jsonl", lines.join("\n") + "\n");
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const spec = countdownSpec(emu.url, { maxSteps: 1, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } });
    const { view: created, stub } = await createRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url: "r2://DATASETS/cd/train.jsonl" }] });
    expect(created.datasets).toEqual({ cd: { accepted: 40, rejected: 1, namespace: "cd:train" } });

    const view = await untilFinished(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "maxSteps", totals: { episodesEnded: 4, groupsCompleted: 2 } });
    // exactly the window's two tasks were read (of 40), each under the id its file row gives (the refused line 6
    // keeps index 5, so run task i > 4 is file row i + 1)
    const read = await storedTasks(stub);
    expect(read).toHaveLength(2);
    for (const t of read) {
      // run-scoped like inline rows: `<dataset id>@<run tag>`
      const fileIndex = Number(t.task_id.split(":")[2]!.split("@")[0]);
      expect(t.task_id).toMatch(new RegExp(`^cd:train:${fileIndex}@[0-9a-f]{8}$`));
      expect(JSON.parse(t.body).metadata.level).toBe(rows[fileIndex > 5 ? fileIndex - 1 : fileIndex]!.level);
    }
    const accepted = (await emu.state()).stepLog.flatMap((s) => s.episodes);
    expect(new Set(accepted.map((e) => e.taskId))).toEqual(new Set(read.map((t) => t.task_id)));
  });

  it("a Parquet file in R2 (two row groups) is indexed and read row by row, with its answer readers; the run trains its window", async () => {
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: "question", data: rows.map((r) => `What is ${r.level} + 1?`), type: "STRING" },
        { name: "answer", data: rows.map((r) => `${r.level} + 1 = ${r.level + 1} #### ${r.level + 1}`), type: "STRING" },
        { name: "level", data: rows.map((r) => BigInt(r.level)), type: "INT64" },
      ],
      rowGroupSize: 25,
    });
    await env.DATASETS!.put("gsm/test.parquet", parquet);
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 } });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const spec = countdownSpec(emu.url, { function: "math-agent", maxSteps: 1, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } });
    const { view: created, stub } = await createRun({ ...spec, datasets: [{ name: "gsm", kind: "gsm8k", split: "test", url: "r2://DATASETS/gsm/test.parquet", answerReaders: ["boxed", "hash"] }] });
    expect(created.datasets).toEqual({ gsm: { accepted: 40, rejected: 0, namespace: "gsm:test" } });

    const view = await untilFinished(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "maxSteps", totals: { episodesEnded: 4 } });
    const read = await storedTasks(stub);
    expect(read).toHaveLength(2);
    for (const t of read) {
      const task = JSON.parse(t.body);
      expect(task.task_id).toMatch(new RegExp(`^gsm:test:${t.task_index}@[0-9a-f]{8}$`));
      expect(task.metadata).toMatchObject({ level: t.task_index, gold: String(t.task_index + 1) }); // INT64 → number
      expect(task.main_query).toBe(`What is ${t.task_index} + 1?`);
      expect(task.metadata.answer_readers).toEqual(["boxed", "hash"]); // the dataset's readers travel with a row read later
    }
  });

  it("an r2:// URL of a bucket the Worker does not bind, or a missing key → 400 naming the dataset and the fix", async () => {
    const spec = countdownSpec(DEAD_SWARM);
    const noBucket = await postRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url: "r2://OTHER/x.jsonl" }] });
    expect(noBucket.status).toBe(400);
    expect(noBucket.body.error.issues).toEqual([{ code: "invalid", path: "datasets.0", message: expect.stringContaining("r2://OTHER/… names no R2 bucket of this Worker; bound and allowed: DATASETS") }]);
    const noKey = await postRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url: "r2://DATASETS/no/such.jsonl" }] });
    expect(noKey.status).toBe(400);
    expect(noKey.body.error.issues).toEqual([{ code: "invalid", path: "datasets.0", message: "dataset r2://DATASETS/no/such.jsonl does not exist (no such key in bucket DATASETS)" }]);
    const unreachable = await postRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url: "http://127.0.0.1:9/x.jsonl" }] });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error.issues[0]).toMatchObject({ path: "datasets.0", message: expect.stringContaining("cannot fetch dataset http://127.0.0.1:9/x.jsonl") });
  });
});

describe("large dataset files are indexed in the background (AJET_BACKGROUND_INDEX_BYTES, 64 KiB in these tests)", () => {
  /** A JSONL file over the threshold: `n` rows of ~50 bytes each. */
  async function bigFile(key: string, n: number, row: (i: number) => unknown): Promise<string> {
    const text = Array.from({ length: n }, (_, i) => JSON.stringify(row(i))).join("\n") + "\n";
    expect(text.length).toBeGreaterThan(65_536);
    await env.DATASETS!.put(key, text);
    return `r2://DATASETS/${key}`;
  }

  it("POST /runs answers at once in phase indexing (no rows counted yet); the object's alarm indexes the file, then the run starts and trains", async () => {
    const url = await bigFile("bg/train.jsonl", 3000, (i) => ({ target: 24, nums: [2, 3, 4], level: i }));
    const emu = await TestEmulator.start({ policy: { initialAccuracy: 1, malformedRate: 0 }, answerKey: [{ target: 24, nums: [2, 3, 4] }] });
    await emu.boot({ batchSize: 2, numRepeat: 2, maxEnvWorker: 4 });
    const spec = countdownSpec(emu.url, { maxSteps: 1, tuning: { statusPollRollingMs: 100, statusPollWaitingMs: 100 } });
    const { view: created, stub } = await createRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", url }] });
    expect(created).toMatchObject({ phase: "indexing", stopReason: null, failure: null, episodes: { inFlight: 0 } });
    expect(created.waitingFor).toMatch(/^indexing dataset cd for \d+ s/);
    expect(created.datasets).toEqual({});
    const view = await untilFinished(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "maxSteps", totals: { episodesEnded: 4, groupsCompleted: 2 } });
    expect(view.datasets).toEqual({ cd: { accepted: 3000, rejected: 0, namespace: "cd:train" } });
  });

  it("a large file without a usable row: 201 in phase indexing, then the run fails naming the dataset, and its rows are forgotten", async () => {
    const url = await bigFile("bg/bad.jsonl", 3000, (i) => ({ target: "not a number", nums: [i] }));
    const { view: created, stub } = await createRun({ ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", url }] });
    expect(created.phase).toBe("indexing");
    const view = await untilFinished(stub);
    expect(view).toMatchObject({ phase: "finished", stopReason: "failed", waitingFor: null });
    expect(view.failure).toMatch(/^the run's datasets could not be used: datasets\.0: dataset "cd" has no usable task/);
    const left = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT (SELECT count(*) FROM dataset_index) + (SELECT count(*) FROM dataset_ids) AS n").one().n);
    expect(left).toBe(0);
  });
});

describe("inline rows and generated tasks", () => {
  it("3 MB of inline rows (over SQLite's 2 MB row): 201; the stored spec holds no rows, each task its own row", async () => {
    const big = Array.from({ length: 3000 }, (_, i) => ({ target: 24, nums: [2, 3, 4], note: `${i}:`.padEnd(1000, "x") }));
    const spec = countdownSpec(DEAD_SWARM);
    const { view, stub } = await createRun({ ...spec, datasets: [{ name: "cd", kind: "countdown", tasks: big }] });
    expect(view.datasets).toEqual({ cd: { accepted: 3000, rejected: 0, namespace: "cd:train" } });
    const { metaBytes, taskRows } = await runInDurableObject(stub, (_i, state) => ({
      metaBytes: state.storage.sql.exec<{ n: number }>("SELECT length(value) AS n FROM meta WHERE key = 'run'").one().n,
      taskRows: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM tasks").one().n,
    }));
    expect(metaBytes).toBeLessThan(10_000);
    expect(taskRows).toBe(3000);
    await stub.stop();
  });

  it("inline rows over AJET_MAX_INLINE_ROWS → 413 naming the limit and the alternative (a dataset URL)", async () => {
    const many = Array.from({ length: 50_001 }, () => ({ target: 1, nums: [1] }));
    const { status, body } = await postRun({ ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", tasks: many }] });
    expect(status).toBe(413);
    expect(body.error.issues).toEqual([
      {
        code: "too_large",
        path: "datasets.0.tasks",
        message: "datasets.0.tasks: 50001 inline rows (all datasets) is over the cap of 50000 (AJET_MAX_INLINE_ROWS, at most 1000000); use a dataset URL (http(s)://… or r2://BUCKET/KEY), which the Worker reads row by row",
      },
    ]);
  });

  it("inline rows over AJET_MAX_INLINE_BYTES → 413 naming the limit", async () => {
    // 5 rows of 900 KiB (each under AJET_MAX_ROW_BYTES) = 4.5 MiB: under the 8 MiB body cap, over the 4 MiB of rows
    const fat = Array.from({ length: 5 }, () => ({ target: 1, nums: [1], note: "x".repeat(900 * 1024) }));
    const { status, body } = await postRun({ ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", tasks: fat }] });
    expect(status).toBe(413);
    expect(body.error.issues[0]).toMatchObject({ path: "datasets.0.tasks", message: expect.stringContaining("over 4194304 bytes of rows, this Worker's limit (AJET_MAX_INLINE_BYTES); use a dataset URL") });
  });

  it("a generated dataset at the AJET_MAX_GENERATED_TASKS maximum (100,000) is created at once: tasks are made when dispatched", async () => {
    const gen = { ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", generate: { count: 100_000, seed: 3 } }] };
    const { view, stub } = await createRun(gen);
    expect(view.datasets).toEqual({ cd: { accepted: 100_000, rejected: 0, namespace: "cd:gen-3" } });
    expect(view.sources[0]).toMatchObject({ name: "cd", taskCount: 100_000 });
    expect(await storedTasks(stub)).toEqual([]); // nothing generated before a dispatch needs it
    await stub.stop();
  });
});
