/**
 * Limits, not crashes (edge/ground/limits-config.ts): an over-size body (413), a huge `generate` count (413 before
 * anything is generated), too many episodes in one run (400), and no input that reaches a 500 — odd types in
 * every run-spec field, `__proto__` / `constructor` keys in specs and tasks, deep nesting, and odd run ids.
 */
import { describe, expect, it } from "vitest";
import { countdownSpec, DEAD_SWARM } from "../edge/support.ts";
import { bearer, callWorker } from "./_support.ts";

const post = (body: string, overrides: Record<string, string | undefined> = {}) => callWorker("/runs", { method: "POST", headers: bearer(), body }, overrides);

describe("the request body", () => {
  it("larger than AJET_MAX_BODY_BYTES → 413 naming the limit and the alternative (a dataset URL), with or without content-length", async () => {
    const spec = countdownSpec(DEAD_SWARM, { taskCount: 200 });
    const body = JSON.stringify(spec);
    expect(body.length).toBeGreaterThan(2000);
    const sized = await post(body, { AJET_MAX_BODY_BYTES: "2000" });
    expect(sized.status).toBe(413);
    expect(sized.json.error.message).toContain("larger than 2000 bytes (AJET_MAX_BODY_BYTES)");
    expect(sized.json.error.message).toContain("dataset URL");
    // a streamed body has no content-length: it is counted while read
    const stream = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(body)), c.close()) });
    const streamed = await callWorker("/runs", { method: "POST", headers: bearer(), body: stream, duplex: "half" } as RequestInit, { AJET_MAX_BODY_BYTES: "2000" });
    expect(streamed.status).toBe(413);
  });

  it("an unauthenticated body is never read: 401 even when it is over the limit", async () => {
    const res = await callWorker("/runs", { method: "POST", body: "x".repeat(5000) }, { AJET_MAX_BODY_BYTES: "100" });
    expect(res.status).toBe(401);
  });
});

describe("generated tasks and episodes", () => {
  it("a 200-byte body asking generate for 1,000,000 tasks → 413 at once, naming AJET_MAX_GENERATED_TASKS and 'dataset URL'", async () => {
    const spec = { ...countdownSpec(DEAD_SWARM), datasets: [{ name: "cd", kind: "countdown", generate: { count: 1_000_000, seed: 1 } }] };
    expect(JSON.stringify(spec).length).toBeLessThan(400);
    const res = await post(JSON.stringify(spec));
    expect(res.status).toBe(413);
    expect(res.json.error.issues[0]).toMatchObject({ path: "datasets.0.generate.count", message: expect.stringContaining("AJET_MAX_GENERATED_TASKS") });
    expect(res.json.error.issues[0].message).toContain("dataset URL");
  });

  it("a run planning more episodes than AJET_MAX_EPISODES_PER_RUN → 400 naming the limit and what to lower", async () => {
    const res = await post(JSON.stringify(countdownSpec(DEAD_SWARM, { taskCount: 8, epochs: 3, episodeType: "eval" })), { AJET_MAX_EPISODES_PER_RUN: "40" });
    expect(res.status).toBe(400);
    expect(res.json.error.issues[0].message).toContain("plans 48 episodes, over the maximum of 40 per run (AJET_MAX_EPISODES_PER_RUN)");
  });
});

describe("no input reaches a 500", () => {
  const odd: unknown[] = [null, true, 0, -1, 1.5, 1e308, "", "x".repeat(300), [], [null], {}, { a: 1 }, "__proto__"];
  const fields = ["swarms", "datasets", "function", "job", "epochs", "numRepeat", "batchSize", "maxEnvWorker", "maxParallel", "discardEpisodeTimeoutSeconds", "episodeType", "maxSteps", "maxAttempts", "throttleRatio", "successThreshold", "seed", "secrets", "tuning"];

  it("every run-spec field set to every odd value → a 4xx JSON naming a field (or 201 where the value is valid, e.g. job {})", async () => {
    const base = countdownSpec(DEAD_SWARM);
    for (const field of fields) {
      for (const value of odd) {
        const res = await post(JSON.stringify({ ...base, [field]: value }));
        const what = `${field} = ${JSON.stringify(value).slice(0, 20)}`;
        expect(res.status, what).toBeLessThan(500);
        if (res.status !== 201) expect(res.json?.error?.issues?.length, what).toBeGreaterThan(0);
        if (res.status === 201) await callWorker(`/runs/${res.json.runId}/stop`, { method: "POST", headers: bearer() });
      }
    }
  });

  it("odd values inside swarms, datasets and tasks → 4xx", async () => {
    const base = countdownSpec(DEAD_SWARM);
    const variants: unknown[] = [
      { ...base, swarms: [{ url: DEAD_SWARM, headers: "x" }] },
      { ...base, swarms: [{ url: DEAD_SWARM, headers: { "X-A": 5 } }] },
      { ...base, swarms: [{ url: DEAD_SWARM, name: { a: 1 } }] },
      { ...base, datasets: [{ name: "cd", kind: "countdown", tasks: [1, "x", null] }] },
      { ...base, datasets: [{ name: "cd", kind: "countdown", tasks: [{ target: "x", nums: "y" }] }] },
      { ...base, datasets: [{ name: "cd", kind: "nope", tasks: [{ target: 1, nums: [1] }] }] },
      { ...base, datasets: [{ name: "cd", kind: "countdown", generate: { count: -5 } }] },
      { ...base, datasets: [{ name: "cd", kind: "countdown", url: "javascript:alert(1)" }] },
      { ...base, secrets: { A: 1 } },
      { ...base, job: { batchSize: "x" } },
      { ...base, tuning: { runLeaseSeconds: -1 } },
    ];
    for (const v of variants) {
      const res = await post(JSON.stringify(v));
      expect(res.status, JSON.stringify(v).slice(0, 160)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(v).slice(0, 160)).toBeLessThan(500);
    }
  });

  it("__proto__, constructor and prototype keys anywhere (spec, job, secrets, tuning, tasks) → 400 naming the path", async () => {
    const tasks = '[{"target": 24, "nums": [2, 3, 4]}, {"target": 24, "nums": [2, 3, 4], "__proto__": {"polluted": true}}]';
    const bodies: Array<[string, string]> = [
      [`{"__proto__": {"function": "countdown"}, "swarms": [{"url": "${DEAD_SWARM}"}]}`, "__proto__"],
      [`{"constructor": {"prototype": {"x": 1}}}`, "constructor"],
      [`{"swarms": [{"url": "${DEAD_SWARM}"}], "function": "countdown", "datasets": [{"name": "cd", "kind": "countdown", "tasks": ${tasks}}]}`, "datasets.0.tasks.1.__proto__"],
      [`{"secrets": {"__proto__": "x"}}`, "secrets.__proto__"],
      [`{"job": {"constructor": {}}}`, "job.constructor"],
      [`{"tuning": {"prototype": 1}}`, "tuning.prototype"],
    ];
    for (const [body, path] of bodies) {
      const res = await post(body);
      expect(res.status, body).toBe(400);
      expect(res.json.error.issues[0].path, body).toBe(path);
    }
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });

  it("a body nested thousands of levels deep → 400, not a stack overflow", async () => {
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    const res = await post(`{"job": ${deep}}`);
    expect(res.status).toBe(400);
    expect(res.json.error.issues[0].message).toContain("nested more than");
  });

  it("odd run ids → 400 or 404 JSON, never a 500", async () => {
    const ids = ["..%2F..%2Fetc", "%00", "a".repeat(500), "__proto__", "constructor", "%F0%9F%92%A9", "run%20x", "%E0%A4%A", ".."];
    for (const id of ids) {
      for (const suffix of ["", "/report", "/episodes", "/stop"]) {
        const method = suffix === "/stop" ? "POST" : "GET";
        const res = await callWorker(`/runs/${id}${suffix}`, { method, headers: bearer() });
        expect([400, 404], `${method} ${id}${suffix} → ${res.status} ${res.text.slice(0, 100)}`).toContain(res.status);
        expect(res.json?.error?.message, `${id}${suffix}`).toEqual(expect.any(String));
      }
    }
  });
});
