/**
 * The sandbox words of the port (src/port/sandbox.ts, docs/design/sandboxes.md): the id of an attempt's sandbox
 * (FNV-1a 64 of the run and of the attempt, stable per attempt, distinct across attempts), which names are instance
 * types, and the `sandbox` field a run's queue messages carry.
 */
import { describe, expect, it } from "vitest";
import { episodeSandboxConfig, INSTANCE_TYPE_NAMES, isInstanceType, SandboxRunConfig, sandboxField, sandboxIdFor } from "../../../src/port/sandbox.ts";

/** FNV-1a 64 over the UTF-8 bytes of `text` (offset basis 0xcbf29ce484222325, prime 0x100000001b3), 16 hex digits. */
function fnv1a64(text: string): string {
  let h = 14695981039346656037n;
  for (const b of Buffer.from(text, "utf8")) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 1099511628211n);
  return h.toString(16).padStart(16, "0");
}

describe("sandboxIdFor: one id per sandbox of an attempt", () => {
  it("is sb- + FNV-1a 64 of the run + FNV-1a 64 of (episode key, attempt, index) joined by NUL", () => {
    // published FNV-1a 64 vectors: "" → cbf29ce484222325, "a" → af63dc4c8601ec8c, "foobar" → 85944171f73967e8
    expect(sandboxIdFor("a", "gsm8k/0/3#1", 2, 1).slice(0, 20)).toBe("sb-af63dc4c8601ec8c-");
    expect(sandboxIdFor("foobar", "k", 1).slice(0, 20)).toBe("sb-85944171f73967e8-");
    expect(sandboxIdFor("", "k", 1).slice(0, 20)).toBe("sb-cbf29ce484222325-");
    for (const [run, key, attempt, index] of [["run-1", "gsm8k/0/3#1", 2, 0], ["r", "countdown/7/0#3", 1, 4], ["run-é", "t/ü/0#0", 9, 1]] as const) {
      expect(sandboxIdFor(run, key, attempt, index)).toBe(`sb-${fnv1a64(run)}-${fnv1a64(`${key}\u0000${attempt}\u0000${index}`)}`);
    }
  });

  it("the index defaults to 0: the first sandbox of an attempt", () => {
    expect(sandboxIdFor("run-1", "gsm8k/0/3#1", 2)).toBe(sandboxIdFor("run-1", "gsm8k/0/3#1", 2, 0));
    expect(sandboxIdFor("run-1", "gsm8k/0/3#1", 2)).not.toBe(sandboxIdFor("run-1", "gsm8k/0/3#1", 2, 1));
  });

  it("is always 37 lowercase characters, a hash with leading zeros included", () => {
    const ids = Array.from({ length: 64 }, (_, i) => [sandboxIdFor(`run-${i}`, "gsm8k/0/3#1", 1), sandboxIdFor("run-1", `k${i}`, 1)]).flat();
    // some of these hashes start with a 0 hex digit (run-10's, k11's): padded, never shorter
    expect(ids.some((id) => id[3] === "0") && ids.some((id) => id[20] === "0")).toBe(true);
    for (const id of ids) expect(id).toMatch(/^sb-[0-9a-f]{16}-[0-9a-f]{16}$/);
  });

  it("two attempts, keys, runs or indexes never share an id (a retried attempt gets a fresh sandbox)", () => {
    const ids = new Set<string>();
    for (const run of ["run-1", "run-2"]) for (const key of ["a/0/0#0", "a/0/1#0"]) for (const attempt of [1, 2, 3]) for (const index of [0, 1]) ids.add(sandboxIdFor(run, key, attempt, index));
    expect(ids.size).toBe(2 * 2 * 3 * 2);
    // the separator keeps (key "a", attempt 12) apart from (key "a1", attempt 2)
    expect(sandboxIdFor("r", "a", 12)).not.toBe(sandboxIdFor("r", "a1", 2));
  });
});

describe("isInstanceType: only the platform's type names", () => {
  it("accepts each listed name", () => {
    for (const name of INSTANCE_TYPE_NAMES) expect(isInstanceType(name)).toBe(true);
  });

  it("refuses other names, inherited object keys and non-strings — a one-name list from JSON too", () => {
    for (const value of ["huge", "", "Lite", "toString", "constructor", "__proto__", undefined, null, 1, ["lite"], { toString: () => "basic" }]) {
      expect(isInstanceType(value)).toBe(false);
    }
  });
});

describe("the queue message's sandbox settings", () => {
  const block = (input: object) => SandboxRunConfig.parse(input);

  it("a run without a sandbox block, or with it disabled, gives its episodes no sandbox", () => {
    expect(episodeSandboxConfig({ maxParallel: 8 })).toBeUndefined();
    expect(episodeSandboxConfig({ sandbox: block({ enabled: false, maxLive: 4 }), maxParallel: 8 })).toBeUndefined();
    expect(sandboxField({ maxParallel: 8 })).toEqual({});
    expect(sandboxField({ sandbox: block({ enabled: false }), maxParallel: 8 })).toEqual({});
  });

  it("maxLive defaults to the run's maxParallel; a given maxLive is kept; every other setting is passed as resolved", () => {
    const resolved = block({});
    expect(episodeSandboxConfig({ sandbox: resolved, maxParallel: 8 })).toEqual({ ...resolved, maxLive: 8 });
    expect(episodeSandboxConfig({ sandbox: block({ maxLive: 3, instanceType: "basic", secrets: ["GITHUB_TOKEN"] }), maxParallel: 8 })).toEqual({
      enabled: true, instanceType: "basic", maxLive: 3, createsPerSecond: 10, commandTimeoutSeconds: 60, maxOutputBytes: 1_048_576, secrets: ["GITHUB_TOKEN"],
    });
    expect(sandboxField({ sandbox: resolved, maxParallel: 5 })).toEqual({ sandbox: { ...resolved, maxLive: 5 } });
  });
});
