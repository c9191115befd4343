/**
 * `POST /runs` and sandboxes, inside workerd: a function that declares `sandbox: true` in a run without a `sandbox`
 * block, a `sandbox` block on a Worker with no sandbox backend, an unknown instance type, the judge's key in
 * `sandbox.secrets`, and a secret name nobody sets — each a 400 whose issue names the field and the fix.
 */
import { describe, expect, it } from "vitest";
import { countdownSpec, DEAD_SWARM, postRun } from "./support.ts";

const issuesOf = async (spec: Record<string, unknown>) => {
  const { status, body } = await postRun(spec);
  return { status, issues: (body.error?.issues ?? []) as Array<{ path: string; message: string }> };
};

describe("POST /runs with sandboxes", () => {
  it("a function that runs code needs the run's sandbox block", async () => {
    const r = await issuesOf(countdownSpec(DEAD_SWARM, { function: "code-agent", datasets: [{ name: "g", kind: "gsm8k", tasks: [{ question: "q", answer: "#### 1" }] }] }));
    expect(r.status).toBe(400);
    expect(r.issues).toContainEqual({
      code: "invalid",
      path: "sandbox",
      message: 'function "code-agent" runs code in a sandbox (it declares sandbox: true), but this run has no "sandbox" block; add "sandbox": {} to the run spec (ajet-edge dev/run: --sandbox)',
    });
  });

  it("a sandbox block on a Worker without a sandbox backend says which vars to set", async () => {
    const r = await issuesOf(countdownSpec(DEAD_SWARM, { sandbox: {} }));
    expect(r.status).toBe(400);
    expect(r.issues).toEqual([expect.objectContaining({ path: "sandbox", message: expect.stringContaining("set AJET_SANDBOX_URL and AJET_SANDBOX_TOKEN") })]);
  });

  it("an unknown instance type, the judge's key let in, a secret nobody sets", async () => {
    expect((await issuesOf(countdownSpec(DEAD_SWARM, { sandbox: { instanceType: "huge" as never } }))).issues).toContainEqual(
      expect.objectContaining({ path: "sandbox.instanceType", message: "sandbox.instanceType must be one of lite, basic, standard-1, standard-2, standard-3, standard-4" }),
    );
    expect((await issuesOf(countdownSpec(DEAD_SWARM, { sandbox: { secrets: ["JUDGE_API_KEY"] } }))).issues).toContainEqual(
      expect.objectContaining({ path: "sandbox.secrets", message: expect.stringContaining("JUDGE_API_KEY never enters a sandbox") }),
    );
    expect((await issuesOf(countdownSpec(DEAD_SWARM, { sandbox: { secrets: ["GITHUB_TOKEN"] } }))).issues).toContainEqual(
      expect.objectContaining({ path: "sandbox.secrets.0", message: "GITHUB_TOKEN is set by neither the run's secrets nor the operator's AJET_SECRETS; set it, or remove it from sandbox.secrets" }),
    );
  });
});
