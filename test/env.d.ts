/** Bindings of wrangler.toml as seen by tests in the Workers pool. */
import type { Env as WorkerEnv } from "../src/edge/index.ts";
declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
