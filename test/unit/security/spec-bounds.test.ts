import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { specBoundsIssues, characterProblem } from "../../../src/edge/api/spec-bounds.ts";
import { CAPS, capsFrom, capValue } from "../../../src/edge/ground/caps.ts";
import { limitsFrom } from "../../../src/edge/ground/limits-config.ts";
import { parseRunSpec } from "../../../src/scheduler/index.ts";
import { capRows, rangeRows } from "../../support/caps-table.ts";

const caps = capsFrom({});
const base = { swarms: [{ url: "http://127.0.0.1:10086" }], datasets: [{ name: "gsm8k", url: "http://127.0.0.1:1/x.jsonl" }], function: "math-agent" };

describe("the caps table", () => {
  it("is the one docs/security-and-limits.md prints, row for row", () => {
    const doc = readFileSync(new URL("../../../docs/security-and-limits.md", import.meta.url), "utf8");
    for (const row of [...capRows(), ...rangeRows()]) expect(doc, row).toContain(row);
  });

  it("reads vars: unset or not a whole number → default; out of range → clamped; the views agree", () => {
    expect(capsFrom({ AJET_MAX_SWARMS: "x" }).swarms).toBe(16);
    expect(capsFrom({ AJET_MAX_SWARMS: "1e3" }).swarms).toBe(16);
    expect(capsFrom({ AJET_MAX_SWARMS: "5000" }).swarms).toBe(64);
    expect(capsFrom({ AJET_MAX_SWARMS: "0" }).swarms).toBe(1);
    expect(capValue(CAPS.rowBytes, "99999999999999999999")).toBe(CAPS.rowBytes.max);
    expect(capsFrom({ AJET_MAX_ROW_BYTES: "9000000" }).rowBytes).toBe(1536 * 1024);
    expect(limitsFrom({ AJET_MAX_BODY_BYTES: "" }).maxBodyBytes).toBe(8 * 1024 * 1024);
  });
});

describe("specBoundsIssues", () => {
  it("2,000 swarms and 10,000 datasets → one too_large issue each, naming the field, the count, the cap with its var and the way around", () => {
    const swarms = Array.from({ length: 2000 }, (_, i) => ({ name: `s${i}`, url: "http://127.0.0.1:10086" }));
    const datasets = Array.from({ length: 10_000 }, (_, i) => ({ name: `d${i}`, url: "http://127.0.0.1:1/x.jsonl" }));
    const issues = specBoundsIssues({ ...base, swarms, datasets }, caps);
    expect(issues).toEqual(expect.arrayContaining([
      { code: "too_large", path: "swarms", message: "swarms: 2000 entries is over the cap of 16 (AJET_MAX_SWARMS, at most 64); split the run into several runs" },
      { code: "too_large", path: "datasets", message: expect.stringContaining("10000 entries is over the cap of 64 (AJET_MAX_DATASETS, at most 256)") },
    ]));
    expect(issues).toHaveLength(2);
  });

  it("NUL and 64 KiB in job.experimentName, a lone surrogate in a secret, a control character in a key → each named", () => {
    const nul = specBoundsIssues({ ...base, job: { experimentName: `a\u0000${"x".repeat(65536)}` } }, caps);
    expect(nul).toEqual([{ code: "too_large", path: "job.experimentName", message: expect.stringContaining("a string of 65538 characters is over the cap of 2048") }]);
    const nulShort = specBoundsIssues({ ...base, job: { experimentName: "a\u0000b" } }, caps);
    expect(nulShort).toEqual([{ code: "invalid", path: "job.experimentName", message: "job.experimentName holds a control character (U+0000 at position 1); remove it" }]);
    const lone = specBoundsIssues({ ...base, secrets: { TOKEN: "ab\ud800c" } }, caps);
    expect(lone).toEqual([{ code: "invalid", path: "secrets.TOKEN", message: "secrets.TOKEN is not valid Unicode (a lone surrogate U+D800 at position 2); remove it" }]);
    const key = specBoundsIssues({ ...base, swarms: [{ url: "http://127.0.0.1:10086", headers: { "X-\u0007": "v" } }] }, caps);
    expect(key[0]).toMatchObject({ code: "invalid", path: "swarms.0.headers.X-\\u0007" });
  });

  it("free text keeps tab, LF and CR (a YAML, a secret, a task row); names never", () => {
    expect(specBoundsIssues({ ...base, job: { baseYaml: "a:\n\tb: 1\r\n" }, secrets: { K: "x\ny" } }, caps)).toEqual([]);
    expect(specBoundsIssues({ ...base, function: "math\nagent" }, caps)[0]).toMatchObject({ code: "invalid", path: "function" });
    expect(characterProblem("ok 😀", false)).toBeNull();
    expect(characterProblem("\udc00", true)).toContain("lone surrogate U+DC00");
  });

  it("secret values are capped in UTF-8 bytes, the YAML too; secret names must be what {secret:NAME} names", () => {
    const big = specBoundsIssues({ ...base, secrets: { K: "é".repeat(4097) } }, caps);
    expect(big[0]).toMatchObject({ code: "too_large", path: "secrets.K", message: expect.stringContaining("8194 bytes is over the cap of 8192 (AJET_MAX_SECRET_BYTES") });
    const yaml = specBoundsIssues({ ...base, job: { baseYaml: "#".repeat(70_000) } }, caps);
    expect(yaml[0]).toMatchObject({ code: "too_large", path: "job.baseYaml" });
    expect(specBoundsIssues({ ...base, secrets: { "a-b": "x" } }, caps)[0]).toMatchObject({ code: "invalid", path: "secrets.a-b" });
  });

  it("inline rows: counted over all datasets, each row bounded by its bytes", () => {
    const small = capsFrom({ AJET_MAX_INLINE_ROWS: "3", AJET_MAX_ROW_BYTES: "100" });
    const rows = (n: number) => Array.from({ length: n }, () => ({ target: 1, nums: [1] }));
    const two = [{ name: "a", tasks: rows(2) }, { name: "b", tasks: rows(2) }];
    expect(specBoundsIssues({ ...base, datasets: two }, small)[0]).toMatchObject({ code: "too_large", path: expect.stringMatching(/^datasets\.[01]\.tasks$/), message: expect.stringContaining("4 inline rows (all datasets)") });
    const wide = specBoundsIssues({ ...base, datasets: [{ name: "a", tasks: [{ q: "x".repeat(200) }] }] }, small);
    expect(wide[0]).toMatchObject({ code: "too_large", path: "datasets.0.tasks.0" });
  });

  it("a hostile body is not walked past 20 issues", () => {
    const datasets = Array.from({ length: 60 }, () => ({ name: "\u0000" }));
    expect(specBoundsIssues({ ...base, datasets }, caps)).toHaveLength(20);
  });
});

describe("number ranges (scheduler/spec-ranges)", () => {
  const issues = (extra: object) => {
    const r = parseRunSpec({ ...base, datasets: [{ name: "gsm8k" }], ...extra });
    return r.success ? [] : r.issues;
  };
  it("refuses the field values the last round got 201 for, each naming the range", () => {
    expect(issues({ discardEpisodeTimeoutSeconds: 0.0001 })[0]).toMatchObject({ path: "discardEpisodeTimeoutSeconds", message: expect.stringContaining("from 1 to 3,600 seconds") });
    expect(issues({ tuning: { runLeaseSeconds: 1e308 } })[0]).toMatchObject({ path: "tuning.runLeaseSeconds", message: expect.stringContaining("tuning.runLeaseSeconds is 1e308; it must be from 1 to 36,000 seconds") });
    expect(issues({ tuning: { heartbeatSeconds: 1e300 } })[0]).toMatchObject({ path: "tuning.heartbeatSeconds", message: expect.stringContaining("from 1 to 300 seconds") });
    expect(issues({ datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 1e-320 }] })[0]).toMatchObject({ path: "datasets.1.weight" });
    expect(issues({ datasets: [{ name: "a", weight: 1e308 }, { name: "b", weight: 1e308 }] })[0]).toMatchObject({ path: "datasets.0.weight", message: expect.stringContaining("weight is 1e308; it must be from 0.000001 to 1,000,000") });
    expect(issues({ datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 20_000 }] })[0]).toMatchObject({ path: "datasets.0.weight", message: expect.stringContaining("more than 10,000 × apart") });
    expect(issues({ swarms: [{ url: "http://127.0.0.1:10086", engine: { bootTimeoutSeconds: Infinity } }] }).length).toBeGreaterThan(0);
  });
  it("accepts sane values at both ends of each range", () => {
    expect(issues({ discardEpisodeTimeoutSeconds: 1, tuning: { heartbeatSeconds: 300, heartbeatLeaseSeconds: 3600, runLeaseSeconds: 36_000 }, datasets: [{ name: "a", weight: 1 }, { name: "b", weight: 10_000 }] })).toEqual([]);
  });
});
