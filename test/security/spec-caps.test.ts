/**
 * Hostile run specs (issue 18), each on the pool's Worker: counts over their caps (2,000 swarms, 10,000 datasets),
 * nonsense numbers, strings that are not valid Unicode or hold control characters, a spec too large to store. Each
 * → a 4xx naming the field, the value's size or the range, and the fix; none a 500. The memory and time of the
 * large bodies on a fresh local workerd are asserted in test/e2e/hostile-specs.test.ts.
 */
import { describe, expect, it } from "vitest";
import { countdownSpec, DEAD_SWARM } from "../edge/support.ts";
import { bearer, callWorker } from "./_support.ts";

const post = (body: unknown, overrides: Record<string, string | undefined> = {}) => callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify(body) }, overrides);
const base = countdownSpec(DEAD_SWARM);

describe("counts over their caps → 413 naming the field, the count, the cap, its var and the way around", () => {
  it("2,000 swarms (a 156 KiB body) and 10,000 datasets", async () => {
    const swarms = Array.from({ length: 2000 }, (_, i) => ({ name: `swarm-${i}`, url: `${DEAD_SWARM}`, headers: { "X-Team": "a" } }));
    const many = await post({ ...base, swarms });
    expect(many.status).toBe(413);
    expect(many.json.error.issues).toEqual([{ code: "too_large", path: "swarms", message: "swarms: 2000 entries is over the cap of 16 (AJET_MAX_SWARMS, at most 64); split the run into several runs" }]);
    const datasets = Array.from({ length: 10_000 }, (_, i) => ({ name: `d${i}`, kind: "countdown", url: `${DEAD_SWARM}/d${i}.jsonl` }));
    const lots = await post({ ...base, datasets });
    expect(lots.status).toBe(413);
    expect(lots.json.error.issues[0]).toMatchObject({ path: "datasets", message: expect.stringContaining("10000 entries is over the cap of 64 (AJET_MAX_DATASETS") });
  });

  it("an operator's var moves a cap within its range: AJET_MAX_SWARMS=2 refuses three", async () => {
    const swarms = ["a", "b", "c"].map((name) => ({ name, url: DEAD_SWARM }));
    const res = await post({ ...base, swarms }, { AJET_MAX_SWARMS: "2" });
    expect(res.status).toBe(413);
    expect(res.json.error.issues[0].message).toContain("3 entries is over the cap of 2 (AJET_MAX_SWARMS, at most 64)");
  });

  it("secrets, gateway headers, a secret's bytes and the job's YAML", async () => {
    const secrets = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`S${i}`, "v"]));
    expect((await post({ ...base, secrets })).json.error.issues[0]).toMatchObject({ code: "too_large", path: "secrets", message: expect.stringContaining("AJET_MAX_SECRETS") });
    const headers = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, "v"]));
    expect((await post({ ...base, swarms: [{ url: DEAD_SWARM, headers }] })).json.error.issues[0]).toMatchObject({ path: "swarms.0.headers", message: expect.stringContaining("AJET_MAX_GATEWAY_HEADERS") });
    expect((await post({ ...base, secrets: { BIG: "x".repeat(9000) } })).json.error.issues[0]).toMatchObject({ path: "secrets.BIG", message: expect.stringContaining("9000 bytes is over the cap of 8192 (AJET_MAX_SECRET_BYTES") });
    expect((await post({ ...base, job: { baseYaml: `# ${"x".repeat(70_000)}` } })).json.error.issues[0]).toMatchObject({ path: "job.baseYaml", message: expect.stringContaining("AJET_MAX_YAML_BYTES") });
  });

  it("a spec whose stored row would pass the caps one by one but not together → 413, not SQLITE_TOOBIG", async () => {
    // with the swarm and header caps raised to their maxima: 64 swarms × 32 header templates of 1,010 characters
    const headers = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`X-H${i}`, `{secret:T}${"a".repeat(1000)}`]));
    const swarms = Array.from({ length: 64 }, (_, i) => ({ name: i === 0 ? "default" : `s${i}`, url: DEAD_SWARM, headers }));
    const res = await post({ ...base, swarms, secrets: { T: "t" } }, { AJET_MAX_SWARMS: "64", AJET_MAX_GATEWAY_HEADERS: "32" });
    expect(res.status, res.text.slice(0, 600)).toBe(413);
    expect(res.json.error.issues[0]).toMatchObject({ path: "(body)", message: expect.stringMatching(/take \d+ bytes, over the cap of 524288/) });
  });
});

describe("numbers outside their ranges → 400 naming the field and the range", () => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ["discardEpisodeTimeoutSeconds 0.0001", { discardEpisodeTimeoutSeconds: 0.0001 }, "discardEpisodeTimeoutSeconds", "1 to 3,600 seconds"],
    ["a lease tuning of 1e308", { tuning: { runLeaseSeconds: 1e308 } }, "tuning.runLeaseSeconds", "1 to 36,000 seconds"],
    ["heartbeatSeconds 1e300", { tuning: { heartbeatSeconds: 1e300 } }, "tuning.heartbeatSeconds", "1 to 300 seconds"],
    ["a weight of 1e-320 beside 1", { datasets: [{ ...(base.datasets as object[])[0], weight: 1 }, { name: "b", kind: "countdown", generate: { count: 4, seed: 1 }, weight: 1e-320 }] }, "datasets.1.weight", "0.000001 to 1,000,000"],
    ["weights of 1e308 × 2", { datasets: [{ ...(base.datasets as object[])[0], weight: 1e308 }, { name: "b", kind: "countdown", generate: { count: 4, seed: 1 }, weight: 1e308 }] }, "datasets.0.weight", "0.000001 to 1,000,000"],
  ];
  for (const [what, extra, path, range] of cases) {
    it(what, async () => {
      const res = await post({ ...base, ...extra });
      expect(res.status).toBe(400);
      const issue = res.json.error.issues.find((i: { path: string }) => i.path === path);
      expect(issue?.message, JSON.stringify(res.json.error.issues)).toContain(range);
    });
  }
});

describe("strings: valid Unicode, no control characters, bounded", () => {
  it("a lone surrogate in a secret → 400 naming the secret and the position, never echoing its value", async () => {
    const res = await callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify({ ...base, secrets: { TOKEN: "s3cr3t" } }).replace("s3cr3t", "s3cr\\ud800t") });
    expect(res.status).toBe(400);
    expect(res.json.error.issues).toEqual([{ code: "invalid", path: "secrets.TOKEN", message: "secrets.TOKEN is not valid Unicode (a lone surrogate U+D800 at position 4); remove it" }]);
    expect(res.text).not.toContain("s3cr");
  });

  it("NUL plus 64 KiB in job.experimentName → 413 naming its length and the cap; NUL alone → 400", async () => {
    const long = await post({ ...base, job: { experimentName: `run\u0000${"x".repeat(65536)}` } });
    expect(long.status).toBe(413);
    expect(long.json.error.issues[0]).toMatchObject({ path: "job.experimentName", message: expect.stringContaining("a string of 65540 characters is over the cap of 2048") });
    const nul = await post({ ...base, job: { experimentName: "run\u0000" } });
    expect(nul.status).toBe(400);
    expect(nul.json.error.issues[0]).toMatchObject({ path: "job.experimentName", message: expect.stringContaining("U+0000") });
  });
});
