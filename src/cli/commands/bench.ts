/** @module cli/commands/bench — placeholder until its issue lands; says so plainly. */
import type { CliCommand } from "../main.ts";

const command: CliCommand = {
  name: "bench",
  description: "not implemented yet",
  usage: "ajet-edge bench",
  async run() {
    console.error("ajet-edge bench: not implemented yet");
    return 1;
  },
};
export default command;
