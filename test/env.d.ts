/** Bindings of wrangler.toml as seen by tests in the Workers pool: the generated ones plus the Worker's vars. */
import type { WorkerVars } from "../src/edge/ground/env.ts";
declare global {
  namespace Cloudflare {
    interface Env extends WorkerVars {}
  }
}
