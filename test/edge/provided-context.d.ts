/** What the edge project's globalSetup (global-setup.node.ts) provides to the tests inside workerd. */
import "vitest";
declare module "vitest" {
  export interface ProvidedContext {
    /** `POST {url}/emulators` with EmulatorOptions JSON → `{ url }` of a fresh emulator (fast profile) */
    emulatorFactoryUrl: string;
  }
}
