/**
 * @module edge/ground/fence — the Worker's global fetch fenced by episode key (runtime/key-fence). Imported first by the
 * Worker's entry, so even a client a function module builds at load time (and keeps the global fetch of) goes
 * through the fence.
 */
import { installKeyFence } from "../../runtime/key-fence.ts";

/** The isolate's fence; its `original` is the platform fetch. */
export const keyFence = installKeyFence();
