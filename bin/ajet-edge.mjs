#!/usr/bin/env node
// ajet-edge command-line entry. In the installed package it runs the compiled CLI (dist/, plain JavaScript). In
// this repository, where the TypeScript sources are, tsx loads them without a build step (never a stale dist/).
import { existsSync } from "node:fs";

const source = new URL("../src/cli/main.ts", import.meta.url);
let main;
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import(source.href));
} else {
  ({ main } = await import("../dist/src/cli/main.js"));
}
process.exitCode = await main(process.argv.slice(2));
