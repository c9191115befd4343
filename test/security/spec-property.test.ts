/**
 * Random run specs thrown at `POST /runs` validation (issue 18): `validateRun` never throws (no 500), and a spec it
 * accepts is one whose stored row (the spec without inline rows, plus its job YAML) is under the caps table's
 * `storedSpecBytes`, well under SQLite's 2 MB row limit. Then the same specs over the Worker's HTTP handler (the whole
`POST /runs` pipeline, the run's Durable Object included): never a 500, every answer within ANSWER_BOUND_MS, and
no row of an accepted run's SQLite over the platform's row limit. Specs are built near the valid shape (so many pass) with
 * hostile values mixed in: huge and tiny numbers, long strings, control characters, lone surrogates, many entries.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rolloutFunctions } from "../../functions/index.ts";
import { validateRun } from "../../src/edge/api/create-run.ts";
import { CAPS } from "../../src/edge/ground/caps.ts";
import type { Env } from "../../src/edge/ground/env.ts";
import { stubOf } from "../edge/support.ts";
import { bearer, callWorker } from "./_support.ts";

const env = { AJET_ALLOWED_HOSTS: "127.0.0.1", AJET_API_TOKEN: "x".repeat(32), AJET_SECRETS_KEY: "k".repeat(32) } as unknown as Env;

const hostileString = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom("gsm8k", "\u0000", "a\ud800b", "x".repeat(3000), "{secret:T}", "é".repeat(5000), "Bearer {secret:T}"),
  fc.string({ unit: "binary", maxLength: 20 }),
);
const hostileNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -1, 1e-320, 1e308, 0.0001, 2 ** 53, Number.MAX_VALUE), fc.integer({ min: 1, max: 64 }));
const value = fc.oneof(hostileString, hostileNumber, fc.boolean(), fc.constant(null));
/** Mostly a valid value, sometimes a hostile one (so both sides of validation are walked). */
const mostly = <T, U>(valid: fc.Arbitrary<T>, hostile: fc.Arbitrary<U>) => fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: hostile, weight: 1 });
const count = (max: number) => mostly(fc.integer({ min: 1, max }), hostileNumber);
const swarm = fc.record(
  {
    name: mostly(fc.constant("default"), hostileString),
    url: mostly(fc.constant("http://127.0.0.1:10086"), fc.constantFrom("http://127.0.0.1:9", "ftp://x")),
    headers: mostly(fc.dictionary(fc.constantFrom("X-Team", "X-Key"), fc.constantFrom("{secret:T}", "Bearer {secret:T}"), { maxKeys: 2 }), fc.dictionary(hostileString, hostileString, { maxKeys: 20 })),
  },
  { requiredKeys: ["url", "name"] },
);
const dataset = fc.record(
  {
    name: mostly(fc.constantFrom("cd", "cd2"), hostileString),
    kind: mostly(fc.constant("countdown"), fc.constant("gsm8k")),
    generate: fc.record({ count: mostly(fc.integer({ min: 40, max: 200 }), hostileNumber), seed: fc.integer({ min: 0, max: 9 }) }),
    weight: mostly(fc.constantFrom(1, 2, 0.5), hostileNumber),
  },
  { requiredKeys: ["name", "kind", "generate"] },
);
const spec = fc.record(
  {
    swarms: mostly(fc.array(swarm, { minLength: 1, maxLength: 1 }), fc.array(swarm, { minLength: 1, maxLength: 80 })),
    datasets: mostly(fc.array(dataset, { minLength: 1, maxLength: 1 }), fc.array(dataset, { minLength: 1, maxLength: 80 })),
    function: mostly(fc.constant("countdown"), fc.constantFrom("math-agent", "nope")),
    epochs: count(3),
    numRepeat: count(4),
    batchSize: count(8),
    discardEpisodeTimeoutSeconds: mostly(fc.integer({ min: 1, max: 3600 }), hostileNumber),
    secrets: mostly(fc.constant({ T: "t0ken" }), fc.dictionary(fc.oneof(fc.constant("T"), hostileString), hostileString, { maxKeys: 40 })),
    job: fc.dictionary(fc.constantFrom("experimentName", "baseYaml", "projectName", "lr"), value, { maxKeys: 4 }),
    tuning: fc.dictionary(fc.constantFrom("heartbeatSeconds", "runLeaseSeconds", "dispatchLeaseSeconds"), hostileNumber, { maxKeys: 3 }),
  },
  { requiredKeys: ["swarms", "datasets", "function", "secrets"] },
);

describe("random run specs at POST /runs validation", () => {
  it("never throw, and an accepted spec's stored row is under storedSpecBytes", () => {
    let accepted = 0;
    fc.assert(
      fc.property(spec, (body) => {
        const out = validateRun(body, { env, functions: rolloutFunctions });
        if ("title" in out) {
          expect(out.issues.length).toBeGreaterThan(0);
          for (const i of out.issues) expect(["invalid", "too_large"]).toContain(i.code);
          return;
        }
        accepted++;
        const stored = new TextEncoder().encode(JSON.stringify({ ...out.spec, datasets: out.spec.datasets.map(({ tasks: _t, ...d }) => d) })).byteLength + out.jobYaml.length;
        expect(stored).toBeLessThanOrEqual(CAPS.storedSpecBytes.default);
      }),
      { numRuns: 300, seed: 18 },
    );
    console.log(JSON.stringify({ accepted, of: 300 }));
    expect(accepted).toBeGreaterThan(5); // the property is not only walked on refusals
  });
});

/** The platform's largest SQLite row (a Durable Object's string or BLOB value), bytes. */
const PLATFORM_ROW_LIMIT = 2_000_000;
/** One answer's bound, ms: generous for a loaded 2-core machine (a spec's caps answer in a few ms). */
const ANSWER_BOUND_MS = 10_000;

/** The largest row (its values' bytes together) of every table of a run's Durable Object. */
async function largestRow(runId: string): Promise<number> {
  return runInDurableObject(stubOf(runId), (_i, state) => {
    const tables = state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'").toArray();
    let most = 0;
    for (const t of tables) {
      for (const row of state.storage.sql.exec(`SELECT * FROM "${t.name}"`).toArray()) {
        const bytes = Object.values(row).reduce<number>((n, v) => n + (v instanceof ArrayBuffer ? v.byteLength : new TextEncoder().encode(String(v)).byteLength), 0);
        most = Math.max(most, bytes);
      }
    }
    return most;
  });
}

describe("random run specs at POST /runs over HTTP", () => {
  it("never a 500, never slower than the bound, never a stored row over the platform's limit", { timeout: 240_000 }, async () => {
    let created = 0;
    let slowest = 0;
    await fc.assert(
      fc.asyncProperty(spec, async (body) => {
        const t0 = Date.now();
        const res = await callWorker("/runs", { method: "POST", headers: bearer(), body: JSON.stringify(body) });
        const ms = Date.now() - t0;
        slowest = Math.max(slowest, ms);
        expect(res.status, res.text.slice(0, 300)).not.toBe(500);
        expect([201, 400, 413, 429]).toContain(res.status);
        expect(ms).toBeLessThan(ANSWER_BOUND_MS);
        if (res.status !== 201) {
          expect(res.json.error.issues.length).toBeGreaterThan(0);
          return;
        }
        created++;
        const runId = res.json.runId as string;
        expect(await largestRow(runId)).toBeLessThanOrEqual(PLATFORM_ROW_LIMIT);
        await callWorker(`/runs/${runId}/stop`, { method: "POST", headers: bearer() });
      }),
      { numRuns: 60, seed: 1818 },
    );
    console.log(JSON.stringify({ created, of: 60, slowestMs: slowest }));
    expect(created).toBeGreaterThan(2); // the property is not only walked on refusals
  });
});
