/** @module cli/commands/emulator — placeholder until its issue lands; says so plainly. */
import type { CliCommand } from "../main.ts";

const command: CliCommand = {
  name: "emulator",
  description: "not implemented yet",
  usage: "ajet-edge emulator",
  async run() {
    console.error("ajet-edge emulator: not implemented yet");
    return 1;
  },
};
export default command;
