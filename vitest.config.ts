/**
 * @module vitest.config — one root config, three projects (as Hono's runtime-tests):
 *  - `unit`: Node, no workerd, no sockets beyond 127.0.0.1; pure modules, emulator, client, CLI renderers.
 *  - `edge`: the Workers pool on wrangler.toml (Durable Object, queue consumer, hono app) inside workerd.
 *  - `e2e`:  Node; starts the emulator and the Worker in local workerd, runs whole rollouts; also the security
 *    tests that need a fresh Worker of their own (`test/security/*.node.test.ts`: its memory, its time).
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

/** The package's public entries by name, as tsconfig.json `paths` maps them (wrangler's esbuild reads those). */
const resolve = {
  alias: {
    "ajet-edge/testing": fileURLToPath(new URL("./src/testing.ts", import.meta.url)),
    "ajet-edge/worker": fileURLToPath(new URL("./src/edge/worker.ts", import.meta.url)),
    "ajet-edge/episode-worker": fileURLToPath(new URL("./src/edge/episode-worker.ts", import.meta.url)),
    "ajet-edge/emulator": fileURLToPath(new URL("./src/emulator/index.ts", import.meta.url)),
    "ajet-edge": fileURLToPath(new URL("./src/index.ts", import.meta.url)),
  },
};

export default defineConfig({
  test: {
    projects: [
      {
        resolve,
        test: {
          name: "unit",
          environment: "node",
          include: ["test/unit/**/*.test.ts"],
          testTimeout: 20_000,
        },
      },
      {
        resolve,
        plugins: [
          cloudflareTest({
            // the main Worker's bindings, with the episode Worker's consumer in the same isolate (worker-under-test.ts)
            main: "./test/edge/worker-under-test.ts",
            wrangler: { configPath: "./wrangler.toml" },
            // the edge tests drive the queue path (the consumer of wrangler.episode.toml, retries and dead letters as
            // there); miniflare's broker runs one batch per queue at a time, so the tests take batches of 8
            // (the production batch of 1 would run their episodes one by one)
            miniflare: {
              queueConsumers: { "ajet-episodes": { maxBatchTimeout: 0.05, maxBatchSize: 8, maxRetries: 3, deadLetterQueue: "ajet-episodes-dlq" } },
              // the API's tokens (tests send them through test/edge/support.ts) and the emulators' loopback host
              bindings: { AJET_API_TOKEN: "edge-test-api-token-0123456789", AJET_SECRETS_KEY: "edge-test-secrets-key-0123456789abcdef0123456789", AJET_READ_TOKEN: "edge-test-read-token-0123456789", AJET_ALLOWED_HOSTS: "127.0.0.1", AJET_MAX_RUNS_IN_FLIGHT: "1000", AJET_BACKGROUND_INDEX_BYTES: "65536" },
            },
          }),
        ],
        test: {
          name: "edge",
          include: ["test/edge/**/*.test.ts", "test/security/**/*.test.ts"],
          // security tests that start their own local Worker from Node (`*.node.test.ts`) run in the e2e project
          exclude: [...configDefaults.exclude, "test/security/**/*.node.test.ts"],
          // Node side: an emulator factory on 127.0.0.1 the Worker fetches (provides `emulatorFactoryUrl`)
          globalSetup: ["test/edge/global-setup.node.ts"],
          testTimeout: 30_000,
        },
      },
      {
        resolve,
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts", "test/security/**/*.node.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
