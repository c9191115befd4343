/** @module cli/commands/dev — placeholder until its issue lands; says so plainly. */
import type { CliCommand } from "../main.ts";

const command: CliCommand = {
  name: "dev",
  description: "not implemented yet",
  usage: "ajet-edge dev",
  async run() {
    console.error("ajet-edge dev: not implemented yet");
    return 1;
  },
};
export default command;
