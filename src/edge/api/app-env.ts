/**
 * @module edge/api/app-env — the hono environment of the Worker's API: the bindings and what the auth middleware hands
 * the routes. `app.ts` and the route modules import it; the routes never import the app.
 */
import type { Granted } from "./auth.ts";
import type { Env } from "../ground/env.ts";

/** What the middleware hands the routes: the caller's grant (access and principal). */
export interface AppVariables {
  auth: Granted;
}

/** The app's hono environment. */
export type AppEnv = { Bindings: Env; Variables: AppVariables };
