/**
 * `ajet-edge sync-code DIR --swarm-url URL [--force-restart]` (issue 20 §4) against an in-process emulator: the zip of
 * DIR's ajet/ (git-tracked files, or every file but caches outside git) reaches `/sync_train_code` as
 * `application/zip`; a running engine is refused with the fix, `--force-restart` stops it first; a DIR without ajet/
 * is a usage error. The archive is read back with `unzip` (skipped, with a line, when the machine has none).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runSyncCodeCommand } from "../../../src/cli/commands/sync-code.ts";
import { trainCodeFiles, zipFiles } from "../../../src/node/zip-dir.ts";
import { createEmulator, createManualClock, type Emulator } from "../../../src/emulator/index.ts";
import { advancingFetch } from "../../support/emulator-fetch.ts";
import { AgentJetJob } from "../../../src/job/index.ts";
import { SwarmClient } from "../../../src/client/index.ts";

const dirs: string[] = [];
const emulators: Emulator[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  for (const e of emulators.splice(0)) e.close();
});

function checkout(): string {
  const dir = mkdtempSync(join(tmpdir(), "ajet-sync-code-"));
  dirs.push(dir);
  mkdirSync(join(dir, "ajet", "utils", "__pycache__"), { recursive: true });
  writeFileSync(join(dir, "ajet", "__init__.py"), "");
  writeFileSync(join(dir, "ajet", "utils", "x.py"), "print('héllo')\n".repeat(50));
  writeFileSync(join(dir, "ajet", "utils", "__pycache__", "x.cpython-311.pyc"), "junk");
  writeFileSync(join(dir, "README.md"), "not sent");
  return dir;
}

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s), isTTY: false } as never, out, err };
}

function emulator() {
  const clock = createManualClock();
  const emu = createEmulator({ profile: "fast", clock, seed: 1 });
  emulators.push(emu);
  const seen: Array<{ type: string | null; bytes: number }> = [];
  const fetch = advancingFetch(emu, clock);
  const recording = (async (input: string, init: RequestInit) => {
    if (String(input).endsWith("/sync_train_code")) seen.push({ type: new Headers(init.headers).get("content-type"), bytes: (init.body as Uint8Array).byteLength });
    return fetch(input, init);
  }) as unknown as typeof globalThis.fetch;
  return { emu, fetch: recording, seen };
}

describe("sync-code", () => {
  it("zips ajet/ without caches (outside git) and a zip reader reads it back", () => {
    const dir = checkout();
    const files = trainCodeFiles(dir);
    expect(files).toEqual(["ajet/__init__.py", "ajet/utils/x.py"]);
    const zip = zipFiles(dir, files);
    const path = join(dir, "out.zip");
    writeFileSync(path, zip);
    let listing: string;
    try {
      listing = execFileSync("unzip", ["-Z1", path], { encoding: "utf8" });
    } catch {
      console.log("skipped the read-back: no unzip on this machine");
      return;
    }
    expect(listing.trim().split("\n")).toEqual(files);
    expect(execFileSync("unzip", ["-p", path, "ajet/utils/x.py"], { encoding: "utf8" })).toBe("print('héllo')\n".repeat(50));
  });

  it("sends the zip to an OFFLINE server as application/zip", async () => {
    const dir = checkout();
    const { fetch, seen } = emulator();
    const t = io();
    expect(await runSyncCodeCommand([dir, "--swarm-url", "http://127.0.0.1:10086"], t.io, fetch)).toBe(0);
    expect(t.out.join("")).toMatch(/^synced 2 files \(\d+ bytes zipped\) to http:\/\/127.0.0.1:10086: .*ajet_temp.*ajet; the next engine start runs this code/);
    expect(seen).toEqual([{ type: "application/zip", bytes: expect.any(Number) }]);
  });

  it("a running engine is refused with the fix; --force-restart stops it first", async () => {
    const dir = checkout();
    const { fetch } = emulator();
    const client = new SwarmClient({ baseURL: "http://127.0.0.1:10086", fetch, logger: { info: () => {}, warn: () => {}, error: () => {} } });
    await client.syncTrainConfig(new AgentJetJob({ batchSize: 1, numRepeat: 1 }));
    await client.requestEngineStart(); // BOOTING: not OFFLINE
    const refused = io();
    expect(await runSyncCodeCommand([dir, "--swarm-url", "http://127.0.0.1:10086"], refused.io, fetch)).toBe(1);
    expect(refused.err.join("")).toMatch(/is ENGINE.BOOTING; code can only be synced while it is OFFLINE.*--force-restart/);
    const forced = io();
    expect(await runSyncCodeCommand([dir, "--swarm-url", "http://127.0.0.1:10086", "--force-restart"], forced.io, fetch)).toBe(0);
    expect((await client.getEngineStatus()).status).toBe("ENGINE.OFFLINE");
  });

  it("a DIR without ajet/ is a usage error naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ajet-sync-code-"));
    dirs.push(dir);
    await expect(runSyncCodeCommand([dir, "--swarm-url", "http://127.0.0.1:10086"], io().io)).rejects.toThrow(/has no ajet\/ directory/);
  });
});
