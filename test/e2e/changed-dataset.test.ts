/**
 * A URL dataset replaced during a run (issue 18), end to end on local workerd with the dataset on a 127.0.0.1 host:
 * the new file has rows of the same byte lengths and the host keeps the same weak ETag, so no validator says it
 * changed. The digest kept per row at index time does: the run fails (stop reason `failed`) naming the dataset and
 * the row after a bounded number of confirmations, instead of retrying the dispatch for ever; no row of the new file
 * reaches a task, and no episode is left claimed at the server.
 */
import { afterAll, describe, expect, it } from "vitest";
import { waitForRun } from "../../src/cli/dev/runs-api.ts";
import { startDatasetServer, type DatasetServer } from "../support/dataset-server.ts";
import { episodeBuffer, startRig, type E2eRig } from "./_support.ts";

const ROWS = 40;
/** Row i before and after the replacement: the same target and byte length, the numbers in another order. */
const row = (i: number, replaced: boolean) => {
  const nums = [(i % 9) + 1, (i % 7) + 2, 3, 4];
  return JSON.stringify({ target: nums.reduce((a, b) => a + b, 0), nums: replaced ? [...nums].reverse() : nums });
};
const file = (replaced: boolean) => new TextEncoder().encode(`${Array.from({ length: ROWS }, (_, i) => row(i, replaced)).join("\n")}\n`);

describe("e2e: a dataset replaced under a run behind the same weak ETag", () => {
  let rig: E2eRig | undefined;
  let server: DatasetServer | undefined;
  afterAll(async () => {
    await rig?.session.close();
    await server?.close();
  });

  it("fails the run naming the dataset and the row, within a bound, with nothing left claimed", { timeout: 240_000 }, async () => {
    server = await startDatasetServer();
    const before = file(false);
    const after = file(true);
    expect(after.byteLength).toBe(before.byteLength);
    server.put("countdown-swap.jsonl", before, { etag: 'W/"same"' });
    const url = `${server.url}/files/countdown-swap.jsonl`;
    rig = await startRig(["--dataset", url, "--batch-size", "2", "--num-repeat", "2", "--steps", "10"]);
    const created = await rig.api.create(rig.session.spec);
    expect(created.datasets).toMatchObject({ countdown: { accepted: ROWS, rejected: 0 } });
    // replaced as soon as the run exists: only rows read before this are the indexed ones
    server.put("countdown-swap.jsonl", after, { etag: 'W/"same"' });

    const t0 = Date.now();
    const done = await waitForRun(rig.api, created.runId, { timeoutMs: 180_000 });
    const ms = Date.now() - t0;
    expect(done.outcome).toBe("finished");
    expect(done.status).toMatchObject({ stopReason: "failed" });
    expect(done.status?.failure).toMatch(/^dataset "countdown" changed during the run: dataset http:\/\/127\.0\.0\.1:\d+\/files\/countdown-swap\.jsonl line \d+ is not the row the run indexed/);
    // bounded: three confirmations, each after the dispatch back-off (not ~380 reads in 8 minutes)
    expect(ms).toBeLessThan(150_000);
    // nothing left claimed at the server
    const buffer = await episodeBuffer(rig.emulator);
    expect(buffer.filter((e) => e.episode_status === "claimed")).toEqual([]);

    // the same with a strong ETag: the host says 412 to the run's If-Match, which fails the run the same way
    server.put("countdown-etag.jsonl", before);
    const strong = await rig.api.create({ ...rig.session.spec, datasets: [{ name: "countdown", kind: "countdown", url: `${server.url}/files/countdown-etag.jsonl` }] } as never);
    server.put("countdown-etag.jsonl", after);
    const t1 = Date.now();
    const etagDone = await waitForRun(rig.api, strong.runId, { timeoutMs: 180_000 });
    const etagMs = Date.now() - t1;
    expect(etagDone.status).toMatchObject({ stopReason: "failed" });
    expect(etagDone.status?.failure).toMatch(/^dataset "countdown" changed during the run: dataset http:\/\/127\.0\.0\.1:\d+\/files\/countdown-etag\.jsonl changed since the run indexed it \(ETag differs\)/);
    expect(etagMs).toBeLessThan(150_000);
    expect((await episodeBuffer(rig.emulator)).filter((e) => e.episode_status === "claimed")).toEqual([]);
    console.log(JSON.stringify({ failedAfterMs: { weakEtagDigest: ms, strongEtag412: etagMs }, failure: done.status?.failure }));
  });
});
