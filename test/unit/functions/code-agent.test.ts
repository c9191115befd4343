/**
 * The code-agent function with a scripted model and a real local sandbox server: the program the model writes is
 * run in the sandbox and the number it prints is scored; a program that fails, prints nothing, loops or prints
 * without end scores 0; a reply without code scores 0 and makes no sandbox; and the sandbox is destroyed at close.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import codeAgent, { extractProgram, printedAnswer } from "../../../functions/code-agent.ts";
import { createTestContext, localSandboxBackend, testSandbox } from "../../../src/testing.ts";
import { listLocalSandboxes } from "../../../src/sandbox/local-backend.ts";
import { startSandboxServer, type RunningSandboxServer } from "../../../src/sandbox/local-server/index.ts";
import type { Task } from "../../../src/protocol/index.ts";

const task = { task_id: "gsm8k:test:0", main_query: "Natalia sold 48 clips in April and half as many in May. How many in total?", init_messages: [], env_type: "gsm8k", metadata: { answer: "48 + 24 = 72\n#### 72" } } as unknown as Task;
const fenced = (code: string) => `Here is my program.\n\n\`\`\`python\n${code}\n\`\`\``;

let root: string;
let server: RunningSandboxServer;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "ajet-code-agent-"));
  server = await startSandboxServer({ root });
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

async function episode(reply: string, config = {}) {
  const sandbox = testSandbox(localSandboxBackend({ url: server.url, token: server.token }), { config });
  const { ctx } = createTestContext({ reply: () => reply, sandbox: sandbox.get });
  try {
    return { out: await codeAgent.run(task, ctx), sandbox };
  } finally {
    await sandbox.close();
  }
}

describe("code-agent", () => {
  it("scores the number the program prints against the gold", async () => {
    const right = await episode(fenced("april = 48\nmay = april // 2\nprint(april + may)"));
    expect(right.out).toMatchObject({ reward: 1, is_success: true, metadata: { printed: "72", exit_code: 0, gold: "72" } });
    expect(right.sandbox.calls.map((c) => c.op)).toEqual(["create", "write", "command", "destroy"]);
    expect((await episode(fenced("print(72.0)"))).out).toMatchObject({ reward: 1 });
    expect((await episode(fenced("print('working...')\nprint(73)"))).out).toMatchObject({ reward: 0, metadata: { printed: "73" } });
    expect(await listLocalSandboxes({ url: server.url, token: server.token })).toEqual([]);
  });

  it("a program that fails, prints nothing, loops, or prints without end scores 0 (the model's failure, not the sandbox's)", async () => {
    expect((await episode(fenced("print(undefined_name)"))).out).toMatchObject({ reward: 0, metadata: { reason: "failed", exit_code: 1 } });
    expect((await episode(fenced("x = 72"))).out).toMatchObject({ reward: 0, metadata: { reason: "no_output" } });
    expect((await episode(fenced("while True:\n    pass"), { commandTimeoutSeconds: 1 })).out).toMatchObject({ reward: 0, metadata: { reason: "timed_out" } });
    const spam = await episode(fenced("while True:\n    print('72' * 100)"), { maxOutputBytes: 4096 });
    expect(spam.out).toMatchObject({ reward: 0, metadata: { reason: "output_cap" } });
    expect(spam.sandbox.fatal()).toBeNull();
  }, 30_000);

  it("a reply without code scores 0 and makes no sandbox", async () => {
    const r = await episode("The answer is 72.");
    expect(r.out).toMatchObject({ reward: 0, metadata: { reason: "no_code" } });
    expect(r.sandbox.calls).toEqual([]);
    expect(r.sandbox.ledger.rows.size).toBe(0);
  });

  it("reads the last fenced block and the last printed line", () => {
    expect(extractProgram("```python\nprint(1)\n```\nthen\n```py\nprint(2)\n```")).toBe("print(2)\n");
    expect(extractProgram("no code")).toBeNull();
    expect(printedAnswer("a\n\n 72 \n\n")).toBe("72");
    expect(printedAnswer("\n")).toBeNull();
  });
});
