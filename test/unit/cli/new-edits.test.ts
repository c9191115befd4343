/**
 * @module test/unit/cli/new-edits — the pure parts of `ajet-edge new`: argument parsing, name rules, identifiers,
 * the registry edit (markers, refusal, idempotence).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseNewArgs } from "../../../src/cli/commands/new.ts";
import { CliError } from "../../../src/cli/command.ts";
import { assertFunctionName, identifierFor } from "../../../src/cli/scaffold/names.ts";
import { addToRegistry, importedIdentifiers, isRegistered } from "../../../src/cli/scaffold/registry.ts";

/** A registry shaped like functions/index.ts, fixed here so the tests hold whatever the live registry holds. */
const registry = [
  "/** @module functions/index */",
  'import type { RolloutFunction } from "../src/sdk/contract.ts";',
  'import countdown from "./countdown.ts";',
  'import mathAgent from "./math-agent.ts";',
  "// ajet-edge:imports (new functions are imported above this line)",
  "",
  "export const rolloutFunctions: Record<string, RolloutFunction> = {",
  '  "countdown": countdown,',
  '  "math-agent": mathAgent,',
  "  // ajet-edge:entries (new functions are registered above this line)",
  "};",
  "",
].join("\n");
const liveRegistry = readFileSync(fileURLToPath(new URL("../../../functions/index.ts", import.meta.url)), "utf8");

describe("ajet-edge new arguments", () => {
  it("takes one NAME and an optional --dir (resolved to an absolute path)", () => {
    expect(parseNewArgs(["my-agent"])).toEqual({ name: "my-agent", root: process.cwd() });
    expect(parseNewArgs(["my-agent", "--dir", "/tmp/project"])).toEqual({ name: "my-agent", root: "/tmp/project" });
    expect(parseNewArgs(["-h"])).toBeNull();
  });

  it.each([
    [[], /missing NAME/],
    [["a", "b"], /expected one NAME, got 2/],
    [["a", "--force"], /unknown option '--force'/],
  ])("refuses %j with a CliError", (argv, message) => {
    expect(() => parseNewArgs(argv)).toThrow(CliError);
    expect(() => parseNewArgs(argv)).toThrow(message);
  });
});

describe("function names", () => {
  it("accepts kebab-case and refuses everything else with the rule in the message", () => {
    for (const ok of ["my-agent", "a", "gsm8k-v2", "x1-y2-z3"]) expect(() => assertFunctionName(ok)).not.toThrow();
    for (const [bad, why] of [
      ["MyAgent", /kebab-case/],
      ["my_agent", /kebab-case/],
      ["2fast", /kebab-case/],
      ["-a", /kebab-case/],
      ["a--b", /'--'/],
      ["agent-", /end with '-'/],
      ["index", /reserved/],
      ["a".repeat(65), /longer than 64/],
    ] as const) {
      expect(() => assertFunctionName(bad)).toThrow(why);
    }
    const err = (() => {
      try {
        assertFunctionName("Bad");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({ code: 2 });
  });

  it("derives a free camelCase identifier, never a reserved word", () => {
    expect(identifierFor("my-agent")).toBe("myAgent");
    expect(identifierFor("gsm8k-v2")).toBe("gsm8kV2");
    expect(identifierFor("agent-2x")).toBe("agent2x");
    expect(identifierFor("new")).toBe("newFunction");
    expect(identifierFor("delete")).toBe("deleteFunction");
    expect(identifierFor("countdown", new Set(["countdown"]))).toBe("countdownFn");
    expect(identifierFor("countdown", new Set(["countdown", "countdownFn"]))).toBe("countdownFn2");
  });
});

describe("registry edit (functions/index.ts)", () => {
  it("reads the registry's imports and entries", () => {
    expect(importedIdentifiers(registry)).toEqual(new Set(["RolloutFunction", "countdown", "mathAgent"]));
    expect([...importedIdentifiers(liveRegistry)]).toEqual(expect.arrayContaining(["RolloutFunction", "countdown", "mathAgent"]));
    expect(isRegistered(registry, "math-agent")).toBe(true);
    expect(isRegistered(registry, "math")).toBe(false);
  });

  it("adds one import above the imports marker and one entry above the entries marker", () => {
    const edited = addToRegistry(registry, "my-agent", "myAgent");
    const lines = edited.split("\n");
    const imports = lines.findIndex((l) => l.startsWith("// ajet-edge:imports"));
    const entries = lines.findIndex((l) => l.trim().startsWith("// ajet-edge:entries"));
    expect(lines[imports - 1]).toBe('import myAgent from "./my-agent.ts";');
    expect(lines[entries - 1]).toBe('  "my-agent": myAgent,');
    expect(lines.length).toBe(registry.split("\n").length + 2);
    expect(edited.replace('import myAgent from "./my-agent.ts";\n', "").replace('  "my-agent": myAgent,\n', "")).toBe(registry);
  });

  it("edits the live functions/index.ts too (its markers are in place)", () => {
    const name = "zz-scaffold-probe";
    const edited = addToRegistry(liveRegistry, name, "zzScaffoldProbe");
    expect(edited).toContain('import zzScaffoldProbe from "./zz-scaffold-probe.ts";\n// ajet-edge:imports');
    expect(edited).toContain('  "zz-scaffold-probe": zzScaffoldProbe,\n  // ajet-edge:entries');
  });

  it("refuses a second registration of the same name (idempotent) and a registry without markers", () => {
    const once = addToRegistry(registry, "my-agent", "myAgent");
    expect(() => addToRegistry(once, "my-agent", "myAgent")).toThrow(/'my-agent' is already registered/);
    expect(() => addToRegistry(registry, "countdown", "countdownFn")).toThrow(/already registered/);
    expect(() => addToRegistry(registry.replace("// ajet-edge:entries", "// gone"), "x", "x")).toThrow(/no '\/\/ ajet-edge:entries' line/);
    expect(() => addToRegistry(registry.replace("// ajet-edge:imports", "// gone"), "x", "x")).toThrow(CliError);
  });
});
