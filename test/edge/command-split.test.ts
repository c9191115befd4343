/** @module test/edge/command-split — which of a decision's commands an episode-port RPC leaves to the alarm. */
import { describe, expect, it } from "vitest";
import { CommandRunner } from "../../src/edge/run/command-runner.ts";
import type { SchedulerCommand } from "../../src/scheduler/index.ts";

const commands: SchedulerCommand[] = [
  { type: "log", level: "info", message: "m", fields: {} },
  { type: "pollEngineStatus", swarms: ["default"] },
  { type: "dispatchEpisodes", episodes: [] },
  { type: "abortEpisodes", episodes: [] },
  { type: "resolveOutbox", episodes: [] },
];

describe("CommandRunner.split", () => {
  it("from an RPC, the commands that call a swarm server (polls, aborts, outbox resends) wait for the alarm; logs and dispatches run now, in order", () => {
    const { now, later } = CommandRunner.split(commands, false);
    expect(now.map((c) => c.type)).toEqual(["log", "dispatchEpisodes"]);
    expect(later.map((c) => c.type)).toEqual(["pollEngineStatus", "abortEpisodes", "resolveOutbox"]);
  });

  it("inline (the alarm, create, stop) every command runs now", () => {
    const { now, later } = CommandRunner.split(commands, true);
    expect(now).toEqual(commands);
    expect(later).toEqual([]);
  });
});
