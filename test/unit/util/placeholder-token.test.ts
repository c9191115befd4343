/** @module test/unit/util/placeholder-token — the example token and the usual stand-ins are recognised; random tokens are not. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { EXAMPLE_API_TOKEN, placeholderTokenReason } from "../../../src/util/placeholder-token.ts";

describe("placeholderTokenReason", () => {
  it("recognises the token .dev.vars.example ships", () => {
    const example = readFileSync(new URL("../../../.dev.vars.example", import.meta.url), "utf8");
    const shipped = /^AJET_API_TOKEN="([^"]*)"/m.exec(example)?.[1];
    expect(shipped).toBe(EXAMPLE_API_TOKEN);
    expect(placeholderTokenReason(shipped!)).toBe("it is the placeholder of .dev.vars.example");
    expect(placeholderTokenReason("replace-with-another-long-random-token")).toBe("it is the placeholder of .dev.vars.example");
  });

  it("recognises the usual stand-ins, naming the pattern and never the value", () => {
    for (const t of ["changeme-changeme-changeme", "<your-api-token>", "$AJET_API_TOKEN", "xxxxxxxxxxxxxxxxxxxx", "aaaaaaaaaaaaaaaaaaaa", "…", "your_token_here_please", "PUT-YOUR-TOKEN-HERE", "my-example-token-1234"]) {
      const reason = placeholderTokenReason(t);
      expect(reason, t).not.toBeNull();
      expect(reason!, t).not.toContain(t);
    }
  });

  it("lets random tokens through", () => {
    for (const t of ["3f9a1c0e5b7d2468ace13579bdf02468", "edge-test-api-token-0123456789", "Zx8-qW2_pL0.mN7kR4tY", ""]) expect(placeholderTokenReason(t), t).toBeNull();
  });
});
