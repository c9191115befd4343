/**
 * The hashes that key every run's shuffles (scheduler/rng) are stable: a run resumed after a deploy must draw the same
 * task order, so their values may not change between versions. hashString is FNV-1a over UTF-16 code units finished
 * with mix32 (checked against the published FNV-1a 32-bit test vectors); hashWords and seedRng are pinned to the
 * values today's runs use.
 */
import { describe, expect, it } from "vitest";
import { hashString, hashWords, mix32, seedRng } from "../../../src/scheduler/rng.ts";

describe("stable hashes", () => {
  it("hashString is FNV-1a (published 32-bit vectors) finished with mix32", () => {
    const fnv1a: Record<string, number> = { "": 0x811c9dc5, a: 0xe40c292c, foobar: 0xbf9cf968 };
    for (const [text, fnv] of Object.entries(fnv1a)) expect(hashString(text), JSON.stringify(text)).toBe(mix32(fnv));
  });

  it("hashWords and seedRng keep the values today's runs were shuffled with (order matters)", () => {
    expect(hashWords(1, 2)).toBe(2058125719);
    expect(hashWords(2, 1)).toBe(2524268133);
    expect(seedRng(0)).toBe(1262692578);
    expect(seedRng(42)).toBe(96381743);
  });
});
