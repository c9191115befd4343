/**
 * `ajet-edge emulator`: argument parsing, usage errors, and a real start on 127.0.0.1 (random port) that
 * prints one ready line and stops cleanly.
 */
import { describe, expect, it } from "vitest";
import { parseEmulatorArgs, runEmulatorCommand } from "../../../src/cli/commands/emulator.ts";
import { CliError } from "../../../src/cli/command.ts";
import { main } from "../../../src/cli/main.ts";

describe("ajet-edge emulator arguments", () => {
  it("defaults to 127.0.0.1:10086, profile real, seed 0", () => {
    expect(parseEmulatorArgs([])).toEqual({ port: 10086, host: "127.0.0.1", profile: "real", seed: 0 });
  });

  it("parses every option", () => {
    expect(
      parseEmulatorArgs(["--port", "0", "--profile", "fast", "--seed", "9", "--answer-key", "k.jsonl", "--upstream", "http://127.0.0.1:1/v1", "--upstream-key", "k", "--upstream-model", "m"]),
    ).toEqual({ port: 0, host: "127.0.0.1", profile: "fast", seed: 9, answerKeyFile: "k.jsonl", upstream: { baseUrl: "http://127.0.0.1:1/v1", apiKey: "k", model: "m" } });
    expect(parseEmulatorArgs(["--help"])).toBeNull();
    expect(parseEmulatorArgs(["--profile", "slow", "--llm-latency-ms", "600000"])).toMatchObject({ profile: "slow", llmLatencyMs: 600_000 });
  });

  it.each([
    [["--port", "99999"], /--port must be an integer from 0 to 65535/],
    [["--profile", "turbo"], /--profile must be one of real, dev, fast, slow/],
    [["--llm-latency-ms", "-1"], /--llm-latency-ms must be an integer from 0 to 3600000/],
    [["--upstream", "http://x"], /--upstream needs --upstream-key/],
    [["--bogus"], /unknown option '--bogus'/],
  ])("refuses %j", (argv, message) => {
    expect(() => parseEmulatorArgs(argv)).toThrow(CliError);
    expect(() => parseEmulatorArgs(argv)).toThrow(message);
  });

  it("main() turns a usage error into exit code 2", async () => {
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args.join(" "));
    try {
      expect(await main(["emulator", "--profile", "turbo"])).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors).toEqual(["ajet-edge emulator: --profile must be one of real, dev, fast, slow, got 'turbo'\nrun 'ajet-edge emulator --help' for the options"]);
  });
});

describe("ajet-edge emulator serving", () => {
  it("prints a ready line with the URL, serves /health, and stops", async () => {
    const lines: string[] = [];
    const code = await runEmulatorCommand(["--port", "0", "--profile", "fast"], {
      log: (line) => lines.push(line),
      waitForStop: async (running) => {
        const health = await fetch(`${running.url}/health`);
        expect(await health.json()).toEqual({ status: "ok" });
        expect(running.emulator.config.profile).toBe("fast");
        expect(running.emulator.publicBaseUrl).toBe(`${running.url}/v1`);
        expect(running.url).toBe(`http://127.0.0.1:${running.port}`);
        return 130;
      },
    });
    expect(code).toBe(130);
    expect(lines[0]).toMatch(/^ajet-edge emulator ready at http:\/\/127\.0\.0\.1:\d+ \(profile fast, seed 0, simulated policy, 0 answer key rows\); Ctrl-C to stop$/);
    expect(lines.at(-1)).toBe("ajet-edge emulator stopped");
  });
});
