/**
 * @module node/zip-dir — the training-code archive `ajet-edge sync-code` sends (spec §3.3): a zip whose top level holds
 * `ajet/`, built like the Python client's `sync_train_code_from_dir` from the git-tracked files under `DIR/ajet` (every
 * file under it, caches and VCS folders left out, when DIR is not a git checkout). Deflated entries (node:zlib), no
 * dependency: the format's local headers, central directory and end record (APPNOTE 6.3, no zip64: ≤ 65 535 files,
 * < 4 GiB).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";

const SKIPPED = new Set(["__pycache__", ".git", ".mypy_cache", ".pytest_cache", "node_modules"]);

/**
 * The files of `DIR/ajet` to send, as zip paths (`ajet/...`, forward slashes), sorted.
 * @throws Error naming DIR when it has no `ajet/` directory
 */
export function trainCodeFiles(dir: string): string[] {
  const root = join(dir, "ajet");
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`${dir} has no ajet/ directory: give the checkout of AgentJet whose ajet/ package the server should run`);
  try {
    const out = execFileSync("git", ["-C", dir, "ls-files", "-z", "--", "ajet"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const tracked = out.split("\0").filter((f) => f !== "" && existsSync(join(dir, f)));
    if (tracked.length > 0) return tracked.sort();
  } catch {
    // not a git checkout: every file under ajet/
  }
  const files: string[] = [];
  const walk = (at: string) => {
    for (const e of readdirSync(at, { withFileTypes: true })) {
      if (SKIPPED.has(e.name)) continue;
      const p = join(at, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && !e.name.endsWith(".pyc")) files.push(relative(dir, p).split(sep).join("/"));
    }
  };
  walk(root);
  return files.sort();
}

/**
 * A zip of `paths` (relative to `dir`, forward slashes), each deflated.
 * @throws RangeError past the format's limits without zip64 (65 535 files, 4 GiB)
 */
export function zipFiles(dir: string, paths: readonly string[]): Uint8Array {
  if (paths.length > 0xffff) throw new RangeError(`${paths.length} files are more than a zip without zip64 holds (65535)`);
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const path of paths) {
    const data = readFileSync(join(dir, path));
    const packed = deflateRawSync(data);
    const name = Buffer.from(path, "utf8");
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += local.length + name.length + packed.length;
    if (offset > 0xffffffff) throw new RangeError("the training code is over 4 GiB: more than a zip without zip64 holds");
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(paths.length, 8);
  end.writeUInt16LE(paths.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, cd, end]));
}
