/** The components `spool serve` runs, each its own process in a deployment. */
export const COMPONENTS = ['gateway', 'accounts', 'jobs', 'stations', 'webhooks'] as const;
export type Component = (typeof COMPONENTS)[number];
