/**
 * @module port/weight-sync — what a weight-sync hook is told of one server step (the function module's `onWeightSync`
 * and the run's `weightSyncWebhook`): this run's share of the batch the engine trains.
 */

/** The metrics of one server step a weight-sync hook gets. */
export interface WeightSyncMetrics {
  /** this run's accepted episodes in the batch */
  episodes: number;
  /** their mean reward, null when none */
  meanReward: number | null;
  /** other clients' episodes the pool listed in the batch */
  otherClientsEpisodes: number;
  /** the run's training windows opened so far */
  windows: number;
}
