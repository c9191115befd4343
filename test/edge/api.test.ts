/**
 * The Worker's HTTP API inside workerd (SELF.fetch): health, `POST /runs` validation (400 JSON whose issues name
 * the field path), unknown runs (404), and a valid run's status, stop and report.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { apiFetch, countdownSpec, DEAD_SWARM, postRun } from "./support.ts";

const paths = (body: any): string[] => (body?.error?.issues ?? []).map((i: { path: string }) => i.path);

describe("GET /health", () => {
  it("answers ok without a token, and nothing else (no function list)", async () => {
    const res = await SELF.fetch("https://edge.test/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("an unknown route is a JSON 404", async () => {
    const res = await apiFetch("/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining("/nope") } });
  });
});

describe("POST /runs with a bad body", () => {
  const bad: Array<[string, (spec: Record<string, unknown>) => unknown, string]> = [
    ["a dataset weight of 0", (s) => ({ ...s, datasets: [{ ...(s.datasets as object[])[0], weight: 0 }] }), "datasets.0.weight"],
    ["a negative second dataset weight", (s) => ({ ...s, datasets: [...(s.datasets as object[]), { name: "cd2", kind: "countdown", tasks: [{ target: 1, nums: [1] }], weight: -1 }] }), "datasets.1.weight"],
    ["an unknown function", (s) => ({ ...s, function: "no-such-function" }), "function"],
    ["no swarms", (s) => ({ ...s, swarms: [] }), "swarms"],
    ["a swarm url that is not http", (s) => ({ ...s, swarms: [{ url: "ftp://x" }] }), "swarms.0.url"],
    ["a batch size of 1.5", (s) => ({ ...s, batchSize: 1.5 }), "batchSize"],
    ["an unknown top-level field", (s) => ({ ...s, bachSize: 2 }), "bachSize"],
    ["a dataset file path (CLI only)", (s) => ({ ...s, datasets: [{ name: "cd", kind: "countdown", path: "/tmp/x.jsonl" }] }), "datasets.0.path"],
    ["an unknown answer reader", (s) => ({ ...s, datasets: [{ ...(s.datasets as object[])[0], answerReaders: ["boxed", "guess"] }] }), "datasets.0.answerReaders.1"],
    ["a dataset with two sources", (s) => ({ ...s, datasets: [{ name: "cd", kind: "countdown", tasks: [{ target: 1, nums: [1] }], url: "http://127.0.0.1:9/x.jsonl" }] }), "datasets.0.tasks"],
  ];
  for (const [what, mutate, path] of bad) {
    it(`${what} → 400 naming ${path || "the field"}`, async () => {
      const { status, body } = await postRun(mutate(countdownSpec(DEAD_SWARM)));
      expect(status).toBe(400);
      expect(body.error.message).toEqual(expect.any(String));
      expect(body.error.issues.length).toBeGreaterThan(0);
      for (const issue of body.error.issues) expect(issue.message).toEqual(expect.any(String));
      if (path) expect(paths(body)).toContain(path);
    });
  }

  it("reports every problem at once: a spec field and a dataset field together, with the fix", async () => {
    const spec = countdownSpec(DEAD_SWARM);
    const { status, body } = await postRun({ ...spec, batchSize: 0, bachSize: 2, datasets: [{ name: "cd", kind: "countdown" }] });
    expect(status).toBe(400);
    expect(paths(body)).toEqual(expect.arrayContaining(["batchSize", "bachSize", "datasets.0.url"]));
    expect(body.error.issues.find((i: { path: string }) => i.path === "bachSize").message).toContain('did you mean "batchSize"');
  });

  it("a body that is not JSON → 400 naming the body", async () => {
    const { status, body } = await postRun("{not json");
    expect(status).toBe(400);
    expect(paths(body)).toEqual(["(body)"]);
  });

  it("a JSON array or null → 400, never a 500", async () => {
    for (const raw of ["[]", "null", "42"]) {
      const { status, body } = await postRun(raw);
      expect(status, raw).toBe(400);
      expect(body.error.issues.length, raw).toBeGreaterThan(0);
    }
  });
});

describe("runs that do not exist", () => {
  it("GET, stop and report of an unknown run → 404 JSON", async () => {
    for (const [method, path] of [["GET", "/runs/run-unknown"], ["POST", "/runs/run-unknown/stop"], ["GET", "/runs/run-unknown/report"]] as const) {
      const res = await apiFetch(`${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toMatchObject({ error: { message: "no run run-unknown" } });
    }
  });

  it("a run id with characters outside the allowed set → 400 naming the id", async () => {
    const res = await apiFetch("/runs/bad%20id%21");
    expect(res.status).toBe(400);
    expect(paths(await res.json())).toEqual(["id"]);
  });
});

describe("a valid run", () => {
  it("POST /runs → 201 with the run's status; GET shows it; stop drains it; report has a summary", async () => {
    const { status, body } = await postRun(countdownSpec(DEAD_SWARM));
    expect(status).toBe(201);
    expect(body).toMatchObject({ runId: expect.stringMatching(/^run-/), function: "countdown", swarms: [{ name: "default", url: DEAD_SWARM }] });
    expect(body.datasets.cd).toMatchObject({ accepted: 4, rejected: 0 });
    const runId = body.runId as string;

    const got = await apiFetch(`/runs/${runId}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toMatchObject({ runId });

    const stopped = await apiFetch(`/runs/${runId}/stop`, { method: "POST" });
    expect(stopped.status).toBe(200);
    const report = await apiFetch(`/runs/${runId}/report`);
    expect(report.status).toBe(200);
    expect(await report.json()).toMatchObject({ summary: expect.any(Object), eval: null });
  });

  it("the run's secrets are never shown: not in the 201, the status, the report or the log", async () => {
    const secret = "sk-judge-DO-NOT-LEAK-1234";
    const { status, body } = await postRun({ ...countdownSpec(DEAD_SWARM), secrets: { JUDGE_API_KEY: secret } });
    expect(status).toBe(201);
    expect(JSON.stringify(body)).not.toContain(secret);
    for (const path of [`/runs/${body.runId}`, `/runs/${body.runId}/report`]) {
      const text = await (await apiFetch(`${path}`)).text();
      expect(text, path).not.toContain(secret);
    }
  });
});
