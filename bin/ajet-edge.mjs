#!/usr/bin/env node
// ajet-edge command-line entry. The CLI is TypeScript (src/cli); tsx loads it without a build step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
