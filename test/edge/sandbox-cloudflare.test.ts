/**
 * The Cloudflare sandbox backend inside workerd, through the real `getSandbox` of `@cloudflare/sandbox` (0.12.10)
 * over a fake of the Sandbox Durable Object's RPC surface — what can run without containers. Checked: the options
 * the SDK sends the object (rpc transport, no keepAlive, sleepAfter backstop, normalized id), the first operation
 * that starts the container, commands under `timeout` with streamed output, exit 124 as a timeout, the output cap,
 * files under /workspace, a fresh code context per run, destroy by a later invocation (the run's sweep) in every
 * bound class, one clear line for an unbound instance type, a container not admitted retried as the SDK advises,
 * and each call charged to the invocation's subrequest budget. Not run here: a real container (no Docker, no image
 * pulls on these machines).
 */
import { getSandbox } from "@cloudflare/sandbox";
import { describe, expect, it } from "vitest";
import { EpisodeSandboxConfig } from "../../src/port/sandbox.ts";
import { attemptSandboxes } from "../../src/sandbox/attempt.ts";
import { cloudflareSandboxBackend, type CloudflareSandboxStub } from "../../src/sandbox/cloudflare-backend.ts";

type Call = { method: string; args: unknown[] };

/** A fake Sandbox object: files in a map, commands answered by `onExec`. */
class FakeSandboxObject {
  readonly calls: Call[] = [];
  readonly files = new Map<string, string>();
  destroyed = false;
  failNext: unknown[] = [];
  onExec: (command: string, opts: { onOutput?: (s: "stdout" | "stderr", d: string) => void; signal?: AbortSignal }) => Promise<{ exitCode: number; stdout: string; stderr: string }> = async () => ({ exitCode: 0, stdout: "", stderr: "" });

  constructor(readonly name: string) {}
  // a plain method: the SDK wraps the object in a Proxy, and private fields do not pass through one
  record(method: string, args: unknown[]) {
    this.calls.push({ method, args });
    const f = this.failNext.shift();
    if (f) throw f;
  }
  async configure(configuration: unknown) {
    this.record("configure", [configuration]);
  }
  async mkdir(path: string, options?: unknown) {
    this.record("mkdir", [path, options]);
    return { success: true, path, recursive: true, timestamp: "" };
  }
  async setEnvVars(env: Record<string, string>) {
    this.record("setEnvVars", [env]);
  }
  async exec(command: string, options: { onOutput?: (s: "stdout" | "stderr", d: string) => void; signal?: AbortSignal }) {
    this.record("exec", [command, options]);
    const r = await this.onExec(command, options);
    return { success: r.exitCode === 0, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, command, duration: 5, timestamp: "" };
  }
  async writeFile(path: string, content: string, options: unknown) {
    this.record("writeFile", [path, content, options]);
    this.files.set(path, content);
    return { success: true, path, timestamp: "" };
  }
  async readFile(path: string, options: unknown) {
    this.record("readFile", [path, options]);
    const content = this.files.get(path);
    if (content === undefined) throw Object.assign(new Error(`File not found: ${path}`), { code: "FILE_NOT_FOUND" });
    return { success: true, path, content, timestamp: "" };
  }
  async listFiles(path: string, options: unknown) {
    this.record("listFiles", [path, options]);
    const files = [...this.files.keys()].filter((p) => p.startsWith(`${path}/`)).map((p) => ({ name: p.split("/").at(-1)!, absolutePath: p, relativePath: p.slice(path.length + 1), type: "file" as const, size: this.files.get(p)!.length, modifiedAt: "", mode: "", permissions: { readable: true, writable: true, executable: false } }));
    return { success: true, path, files, count: files.length, timestamp: "" };
  }
  async createCodeContext(options: unknown) {
    this.record("createCodeContext", [options]);
    return { id: `ctx-${this.calls.length}`, language: "python", cwd: "/workspace", createdAt: new Date(), lastUsed: new Date() };
  }
  async runCode(code: string, options: { onStdout?: (m: { text: string; timestamp: number }) => void }) {
    this.record("runCode", [code, options]);
    options.onStdout?.({ text: "hi\n", timestamp: 0 });
    if (code.includes("raise")) return { code, logs: { stdout: ["hi\n"], stderr: [] }, results: [], error: { name: "ValueError", message: "bad", traceback: ["Traceback", "ValueError: bad"] } };
    return { code, logs: { stdout: ["hi\n"], stderr: [] }, results: [{ text: "42" }] };
  }
  async deleteCodeContext(id: string) {
    this.record("deleteCodeContext", [id]);
  }
  async destroy() {
    this.record("destroy", []);
    this.destroyed = true;
  }
}

/** A fake Durable Object namespace of the Sandbox class: one fake object per name. */
function fakeNamespace() {
  const objects = new Map<string, FakeSandboxObject>();
  const ns = {
    objects,
    idFromName: (name: string) => ({ name, toString: () => name }),
    get: (id: { name: string }) => {
      let o = objects.get(id.name);
      if (!o) objects.set(id.name, (o = new FakeSandboxObject(id.name)));
      return o;
    },
  };
  return ns;
}

const realGetSandbox = (ns: ReturnType<typeof fakeNamespace>, id: string, options: Parameters<typeof getSandbox>[2]) =>
  getSandbox(ns as never, id, options) as unknown as CloudflareSandboxStub;

function backendWith(bindings: Record<string, ReturnType<typeof fakeNamespace>>) {
  const taken: string[] = [];
  const backend = cloudflareSandboxBackend({ getSandbox: realGetSandbox, bindings, take: (p) => void taken.push(p) });
  return { backend, taken };
}

const spec = { instanceType: "lite" as const, image: "default", env: { MODE: "test" }, ttlSeconds: 8 * 240 + 120 };
const run = { timeoutMs: 10_000, maxOutputBytes: 1024 };

describe("Cloudflare sandbox backend (real getSandbox, fake Sandbox object)", () => {
  it("create: the SDK configures the object (rpc transport, no keepAlive, a sleepAfter backstop), the first operation starts the container, env set", async () => {
    const lite = fakeNamespace();
    const { backend, taken } = backendWith({ lite });
    expect(await backend.create("sb-abc", spec)).toEqual({ created: true });
    const o = lite.objects.get("sb-abc")!;
    const configure = o.calls.find((c) => c.method === "configure")?.args[0];
    expect(configure).toMatchObject({ sandboxName: { name: "sb-abc", normalizeId: true }, transport: "rpc", keepAlive: false, sleepAfter: 600, labels: { owner: "ajet-edge" } });
    expect(o.calls.filter((c) => c.method !== "configure").map((c) => [c.method, c.args[0]])).toEqual([
      ["mkdir", "/workspace"],
      ["setEnvVars", { MODE: "test" }],
    ]);
    expect(taken).toEqual(["sandbox create", "sandbox create (env)"]);
  });

  it("commands run under timeout in /workspace with streamed output; exit 124 is a timeout; the cap stops the call", async () => {
    const lite = fakeNamespace();
    const { backend } = backendWith({ lite });
    await backend.create("sb-cmd", spec);
    const o = lite.objects.get("sb-cmd")!;
    o.onExec = async (cmd, opts) => {
      if (cmd.includes("sleep")) return { exitCode: 124, stdout: "", stderr: "" };
      if (cmd.includes("yes")) {
        for (let i = 0; i < 100 && !opts.signal?.aborted; i++) opts.onOutput?.("stdout", "y\n".repeat(50));
        return { exitCode: 0, stdout: "", stderr: "" };
      }
      opts.onOutput?.("stdout", "4\n");
      opts.onOutput?.("stderr", "warn\n");
      return { exitCode: 0, stdout: "4\n", stderr: "warn\n" };
    };
    const chunks: string[] = [];
    const ok = await backend.exec("sb-cmd", { ...run, command: "python3 -c 'print(2+2)'", cwd: "src", onOutput: (s, c) => chunks.push(`${s}:${c}`) });
    expect(ok).toMatchObject({ exitCode: 0, stdout: "4\n", stderr: "warn\n", timedOut: false, capped: false });
    expect(chunks).toEqual(["stdout:4\n", "stderr:warn\n"]);
    const sent = o.calls.find((c) => c.method === "exec")!;
    expect(sent.args[0]).toBe(`timeout -k 2 10 sh -c 'python3 -c '\\''print(2+2)'\\'''`);
    expect(sent.args[1]).toMatchObject({ stream: true, cwd: "/workspace/src" });
    expect(await backend.exec("sb-cmd", { ...run, command: "sleep 99" })).toMatchObject({ exitCode: null, timedOut: true });
    const capped = await backend.exec("sb-cmd", { ...run, command: "yes" });
    expect(capped).toMatchObject({ capped: true, exitCode: null });
    expect(capped.stdout.length).toBeLessThanOrEqual(1024);
  });

  it("files live under /workspace (parents made); a missing file is not_found; listing is relative", async () => {
    const lite = fakeNamespace();
    const { backend } = backendWith({ lite });
    await backend.create("sb-files", spec);
    await backend.writeFile("sb-files", "pkg/main.py", "print(1)\n");
    const o = lite.objects.get("sb-files")!;
    expect(o.calls.filter((c) => c.method === "mkdir").map((c) => c.args[0])).toEqual(["/workspace", "/workspace/pkg"]);
    expect(await backend.readFile("sb-files", "pkg/main.py")).toBe("print(1)\n");
    await expect(backend.readFile("sb-files", "nope.py")).rejects.toMatchObject({ kind: "not_found" });
    expect(await backend.listFiles("sb-files", ".")).toEqual([{ name: "pkg/main.py", type: "file", size: 9 }]);
  });

  it("each code run gets a fresh context, deleted after; result and exception mapped", async () => {
    const lite = fakeNamespace();
    const { backend } = backendWith({ lite });
    await backend.create("sb-code", spec);
    expect(await backend.runCode("sb-code", { ...run, language: "python", code: "6 * 7" })).toMatchObject({ stdout: "hi\n", result: "42", error: null });
    expect(await backend.runCode("sb-code", { ...run, language: "python", code: "raise ValueError('bad')" })).toMatchObject({ error: { name: "ValueError", message: "bad", traceback: "Traceback\nValueError: bad" } });
    const o = lite.objects.get("sb-code")!;
    expect(o.calls.filter((c) => c.method === "createCodeContext")).toHaveLength(2);
    expect(o.calls.filter((c) => c.method === "deleteCodeContext")).toHaveLength(2);
  });

  it("a later invocation (the run's sweep) destroys the id in every bound class; an unbound instance type is one clear line", async () => {
    const lite = fakeNamespace();
    const basic = fakeNamespace();
    const first = backendWith({ lite, basic });
    await first.backend.create("sb-swept", spec);
    const sweep = backendWith({ lite, basic });
    expect(await sweep.backend.destroy("sb-swept")).toEqual({ existed: false });
    expect(lite.objects.get("sb-swept")!.destroyed).toBe(true);
    expect(basic.objects.get("sb-swept")!.destroyed).toBe(true);
    await expect(first.backend.create("sb-big", { ...spec, instanceType: "standard-2" })).rejects.toMatchObject({
      kind: "config",
      message: 'ctx.sandbox(): no container class is bound for instanceType "standard-2" (bound: lite, basic); add a containers entry with instance_type = "standard-2" and its Durable Object binding to wrangler.toml, and name it in AJET_SANDBOX_CLASSES',
    });
  });

  it("a container not admitted (ContainerUnavailableError, retryable) is created again through the attempt's retries", async () => {
    const lite = fakeNamespace();
    const { backend } = backendWith({ lite });
    const o = lite.get(lite.idFromName("sb-x")); // the object exists before the first call
    o.failNext = [undefined, Object.assign(new Error("no instance available"), { name: "ContainerUnavailableError", code: "CONTAINER_UNAVAILABLE", context: { retryable: true, reason: "no-instance" } })];
    const scope = attemptSandboxes({
      provider: { backend },
      config: EpisodeSandboxConfig.parse({ maxLive: 4 }),
      runId: "r",
      episodeKey: "k/0/0#0",
      attempt: 1,
      dispatchId: 1,
      discardEpisodeTimeoutSeconds: 60,
      secrets: {},
      episodeKeys: [],
      signal: new AbortController().signal,
      now: () => Date.now(),
      sleep: async () => undefined,
      random: () => 0,
      log: { warn: () => undefined, info: () => undefined },
    });
    const sb = await scope.get();
    const target = lite.objects.get(sb.id)!;
    target.onExec = async () => ({ exitCode: 0, stdout: "ok\n", stderr: "" });
    expect((await sb.commands.run("echo ok")).stdout).toBe("ok\n");
    expect(scope.fatal()).toBeNull();
    expect((await scope.close()).end).toBe("destroyed");
    expect(target.destroyed).toBe(true);
  });
});
