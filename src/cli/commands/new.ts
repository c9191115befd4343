/** @module cli/commands/new — placeholder until its issue lands; says so plainly. */
import type { CliCommand } from "../main.ts";

const command: CliCommand = {
  name: "new",
  description: "not implemented yet",
  usage: "ajet-edge new",
  async run() {
    console.error("ajet-edge new: not implemented yet");
    return 1;
  },
};
export default command;
