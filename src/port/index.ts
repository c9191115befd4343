/**
 * @module port — the episode port: the words the scheduler Durable Object and the queue consumer share, and the
 * bottom room every other room may import (it imports only `src/protocol`). The queue message (one try of one
 * episode), the reports the consumer sends back and their acks ({@link SchedulerPort}), the outcome recorded before
 * any end or abort (BC-26), the one list of abort causes with the ones never retried, {@link EpisodeAbortError},
 * and the one rule for ending or aborting an episode's claims. Design: docs/design/episode-lifecycle.md.
 */
export * from "./abort.ts";
export * from "./close-claims.ts";
export * from "./episode-message.ts";
export * from "./reports.ts";
export * from "./sandbox.ts";
export * from "./swarms.ts";
export * from "./weight-sync.ts";
