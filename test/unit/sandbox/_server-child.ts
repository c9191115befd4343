/**
 * A sandbox server in its own process, for the restart test (test/unit/sandbox/local-server.test.ts): starts on the
 * state root given as argv[2], makes sandbox `sb-left` with a process in the background that left its group
 * (setsid), prints `READY <url> <token> <marker pid>`, and waits to be killed.
 */
import { startSandboxServer } from "../../../src/sandbox/local-server/index.ts";
import { localSandboxBackend } from "../../../src/sandbox/local-backend.ts";

const server = await startSandboxServer({ root: process.argv[2]! });
const backend = localSandboxBackend({ url: server.url, token: server.token });
await backend.create("sb-left", { instanceType: "lite", image: "default", env: {}, ttlSeconds: 600 });
const out = await backend.exec("sb-left", { command: "setsid sh -c 'sleep 300' >/dev/null 2>&1 & sleep 300 >/dev/null 2>&1 & echo $!", timeoutMs: 10_000, maxOutputBytes: 1000 });
process.stdout.write(`READY ${server.url} ${server.token} ${out.stdout.trim()}\n`);
setInterval(() => undefined, 1000);
