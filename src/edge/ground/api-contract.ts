/**
 * @module edge/ground/api-contract — the words of the Worker's HTTP API that both sides read: the path parameters and
 * query parameters each route accepts (the routes parse them with these schemas: edge/api/runs-routes.ts,
 * edge/dashboard/routes.ts). One name per number: `window` is the run's own 1-based training step (its batch window),
 * `step` only ever the server's `global_step`.
 */
import { z } from "zod";

/** A run id (`:id`): letters, digits and `_ . : -`, at most 128 characters. */
export const RunIdParam = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/);

/** `GET /runs`: a page of runs, newest first; `cursor` is the previous page's `next`. */
export const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20), cursor: z.string().optional() });

/** `GET /runs/:id/episodes`: the ledger, optionally of one server `global_step` (`step`), paged. */
export const EpisodesQuery = z.object({
  step: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  offset: z.coerce.number().int().min(0).default(0),
});
