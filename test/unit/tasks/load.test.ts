/** @module test/unit/tasks/load — task ids (BC-30), readers (text, URL, file, spec), large tasks (BC-53). */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadDatasetFromNode, readTasksFromFile } from "../../../src/node/dataset-file.ts";
import {
  DatasetSpec,
  DatasetSpecs,
  deserializeTask,
  fetchTasks,
  generateCountdownTasks,
  loadDataset,
  parseTasks,
  serializeTask,
  taskSizeBytes,
} from "../../../src/tasks/index.ts";
import { describeShared, sharedPath } from "../../support/shared.ts";

const jsonl = (...rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join("\n");
const GSM = jsonl({ question: "q0", answer: "#### 0" }, { question: "q1", answer: "#### 1" });
const COUNTDOWN = jsonl({ target: 3, nums: [1, 2] }, { target: 6, nums: [2, 3] });

/** A fetch that serves `files` by URL and 404s otherwise, recording the URLs asked for. */
function fakeFetch(files: Record<string, string | Uint8Array>, asked: string[] = []): typeof fetch {
  return (async (input: string | URL | Request) => {
    const url = String(input);
    asked.push(url);
    const body = files[url];
    return body === undefined ? new Response("nope", { status: 404, statusText: "Not Found" }) : new Response(body);
  }) as typeof fetch;
}

describe("BC-30 task ids: namespaced, stable, never random", () => {
  it("BC-30 GSM8K row 0 and Countdown row 0 never collide", () => {
    const gsm = parseTasks(GSM, { name: "gsm8k", kind: "gsm8k" }).tasks;
    const cd = parseTasks(COUNTDOWN, { name: "countdown", kind: "countdown" }).tasks;
    expect(gsm.map((t) => t.task_id)).toEqual(["gsm8k:train:0", "gsm8k:train:1"]);
    expect(cd.map((t) => t.task_id)).toEqual(["countdown:train:0", "countdown:train:1"]);
    expect(new Set([...gsm, ...cd].map((t) => t.task_id)).size).toBe(4);
  });

  it("BC-30 ids are identical across reads (a restart re-reads the same file)", () => {
    const first = parseTasks(GSM, { name: "gsm8k", kind: "gsm8k", split: "test" });
    const again = parseTasks(`\uFEFF\n${GSM.replaceAll("\n", "\r\n\n")}\n`, { name: "gsm8k", kind: "gsm8k", split: "test" });
    expect(again.tasks).toEqual(first.tasks);
  });

  it("BC-30 a row's own task_id is namespaced, kept apart from index ids, and must be unique", () => {
    const text = jsonl(
      { main_query: "a", task_id: "17" },
      { main_query: "b", task_id: 42 },
      { main_query: "c", task_id: "" },
      { main_query: "d", task_id: "17" },
      { main_query: "e", task_id: { x: 1 } },
    );
    const { tasks, report } = parseTasks(text, { name: "mine", kind: "generic", split: "dev" });
    expect(tasks.map((t) => t.task_id)).toEqual(["mine:dev:id=17", "mine:dev:id=42", "mine:dev:2"]);
    expect(report.rejected).toEqual([
      { line: 4, reason: 'duplicate task_id "17" (first at line 1)' },
      { line: 5, reason: "`task_id` must be a string or an integer (got object)" },
    ]);
  });

  it("BC-30 names and splits may not contain the separator", () => {
    expect(() => parseTasks(GSM, { name: "gsm8k:test", kind: "gsm8k" })).toThrow(/invalid dataset option `name`/);
    expect(() => parseTasks(GSM, { name: "gsm8k", kind: "gsm8k", split: "a b" })).toThrow(/`split`/);
  });

  it("BC-30 a run's datasets may not share an id namespace", () => {
    const same = [
      { name: "gsm8k", kind: "gsm8k", url: "https://x.test/a.jsonl" },
      { name: "gsm8k", kind: "gsm8k", url: "https://x.test/b.jsonl", weight: 2 },
    ];
    const result = DatasetSpecs.safeParse(same);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain('share the task-id namespace "gsm8k:train"');
    expect(DatasetSpecs.safeParse([same[0], { ...same[1], split: "test" }]).success).toBe(true);
  });
});

describe("DatasetSpec", () => {
  it("needs exactly one source and refuses unknown keys", () => {
    const none = DatasetSpec.safeParse({ name: "d", kind: "generic" });
    expect(none.error?.issues[0]?.message).toBe("give exactly one of url, path, tasks, generate (got none)");
    const two = DatasetSpec.safeParse({ name: "d", kind: "generic", path: "a", url: "https://x.test/a" });
    expect(two.error?.issues[0]?.message).toContain("(got url, path)");
    expect(DatasetSpec.safeParse({ name: "d", kind: "generic", path: "a", wieght: 2 }).success).toBe(false);
    expect(DatasetSpec.safeParse({ name: "d", kind: "math", generate: { count: 2, seed: 1 } }).success).toBe(false);
    expect(DatasetSpec.parse({ name: "d", kind: "generic", path: "a" }).weight).toBe(1);
  });

  it("loads inline tasks and the generator", async () => {
    const inline = await loadDataset({ name: "inl", kind: "generic", tasks: [{ main_query: "x" }] });
    expect(inline.tasks.map((t) => t.task_id)).toEqual(["inl:train:0"]);
    const gen = await loadDataset({ name: "countdown", kind: "countdown", generate: { count: 3, seed: 9 } });
    expect(gen.tasks).toEqual(generateCountdownTasks({ count: 3, seed: 9 }));
    expect(gen.report).toEqual({ name: "countdown", split: "gen-9", accepted: 3, rejected: [] });
  });

  it("a dataset's answerReaders travel with each task as metadata.answer_readers; an unknown reader is refused", async () => {
    const rows = [{ question: "Eggs?", answer: "#### 18" }, { question: "Cows?", answer: "#### 4" }];
    const chosen = await loadDataset({ name: "g", kind: "gsm8k", tasks: rows, answerReaders: ["boxed", "hash", "final-number"] });
    expect(chosen.tasks.map((t) => t.metadata["answer_readers"])).toEqual([["boxed", "hash", "final-number"], ["boxed", "hash", "final-number"]]);
    const plain = await loadDataset({ name: "g", kind: "gsm8k", tasks: rows });
    expect(plain.tasks[0]!.metadata).not.toHaveProperty("answer_readers");
    await expect(loadDataset({ name: "g", kind: "gsm8k", tasks: rows, answerReaders: ["guess"] as never })).rejects.toThrow('unknown answer reader "guess"; use boxed, hash, final-answer, final-number');
    await expect(loadDataset({ name: "g", kind: "gsm8k", tasks: rows, answerReaders: [] })).rejects.toThrow("answerReaders needs at least one reader");
  });

  it("refuses a path without a file reader (workerd) and names the fix", async () => {
    await expect(loadDataset({ name: "f", kind: "generic", path: "/x.jsonl" })).rejects.toThrow(/loadDatasetFromNode/);
  });
});

describe("readers", () => {
  it("fetchTasks reads a URL through the injected fetch", async () => {
    const asked: string[] = [];
    const fetch = fakeFetch({ "https://data.test/gsm.jsonl": GSM }, asked);
    const result = await fetchTasks("https://data.test/gsm.jsonl", { name: "gsm8k", kind: "gsm8k" }, { fetch });
    expect(result.tasks.map((t) => t.metadata["gold"])).toEqual(["0", "1"]);
    expect(asked).toEqual(["https://data.test/gsm.jsonl"]);
    const viaSpec = await loadDataset({ name: "gsm8k", kind: "gsm8k", url: "https://data.test/gsm.jsonl" }, { fetch });
    expect(viaSpec.tasks).toEqual(result.tasks);
  });

  it("fetchTasks names the URL and status on HTTP errors, and refuses invalid UTF-8", async () => {
    const fetch = fakeFetch({ "https://data.test/bad.jsonl": new Uint8Array([0x7b, 0xff, 0x7d]) });
    await expect(fetchTasks("https://data.test/missing", { name: "d", kind: "generic" }, { fetch })).rejects.toThrow(
      "cannot fetch dataset https://data.test/missing: HTTP 404 Not Found",
    );
    await expect(fetchTasks("https://data.test/bad.jsonl", { name: "d", kind: "generic" }, { fetch })).rejects.toThrow(
      "https://data.test/bad.jsonl is not valid UTF-8 text",
    );
  });

  it("reads a file from a path (Node), BOM included", async () => {
    const dir = await mkdtemp(join(tmpdir(), "ajet-tasks-"));
    try {
      const path = join(dir, "cd.jsonl");
      await writeFile(path, `\uFEFF${COUNTDOWN}\r\n`, "utf8");
      const direct = await readTasksFromFile(path, { name: "countdown", kind: "countdown" });
      expect(direct.tasks.map((t) => t.metadata["target"])).toEqual([3, 6]);
      const viaSpec = await loadDatasetFromNode({ name: "countdown", kind: "countdown", path });
      expect(viaSpec).toEqual(direct);
      await expect(readTasksFromFile(join(dir, "nope.jsonl"), { name: "d", kind: "generic" })).rejects.toThrow(
        /cannot read dataset .*nope\.jsonl/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("BC-53 large tasks", () => {
  it("BC-53 a task with a 200 KB prompt round-trips through parse and serialise intact", () => {
    const unit = "Lorem ipsum \u2028 dolor \u00e9\u4e2d\ud83d\ude00 sit\r\n amet \\ \"quoted\" ";
    const prompt = unit.repeat(Math.ceil(200_000 / unit.length)).slice(0, 200_000);
    const { tasks } = parseTasks(jsonl({ main_query: prompt, metadata: { big: prompt } }), { name: "big", kind: "generic" });
    const task = tasks[0]!;
    expect(task.main_query).toBe(prompt);
    const stored = serializeTask(task);
    expect(deserializeTask(stored)).toEqual(task);
    expect(taskSizeBytes(task)).toBeGreaterThan(400_000);
    expect(taskSizeBytes(task)).toBe(new TextEncoder().encode(stored).byteLength);
  });
});

describeShared("the real GSM8K test split", () => {
  it("reads all 1319 rows of /work/shared/data/gsm8k/test.jsonl, each with a numeric gold", async () => {
    const { tasks, report } = await readTasksFromFile(sharedPath("data/gsm8k/test.jsonl"), {
      name: "gsm8k",
      kind: "gsm8k",
      split: "test",
    });
    expect(report).toEqual({ name: "gsm8k", split: "test", accepted: 1319, rejected: [] });
    expect(tasks[0]!.task_id).toBe("gsm8k:test:0");
    expect(tasks[1318]!.task_id).toBe("gsm8k:test:1318");
    expect(tasks[0]!.metadata["gold"]).toBe("18");
    expect(tasks.every((t) => /^-?\d+(\.\d+)?$/.test(String(t.metadata["gold"])))).toBe(true);
  });
});
