/** The gateway's gRPC clients of the services behind it. */
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import { WebhooksServiceClient } from '../gen/spool/v1/webhooks.js';
import { type AsyncClient, createClient } from '../lib/grpc.js';

export type AccountsClient = AsyncClient<AccountsServiceClient>;
export type JobsClient = AsyncClient<JobsServiceClient>;
export type StationsClient = AsyncClient<StationsServiceClient>;
export type WebhooksClient = AsyncClient<WebhooksServiceClient>;

export interface Backends {
  accounts: AccountsClient;
  jobs: JobsClient;
  stations: StationsClient;
  webhooks: WebhooksClient;
}

export interface BackendAddresses {
  accounts: string;
  jobs: string;
  stations: string;
  webhooks: string;
}

export function connectBackends(addresses: BackendAddresses, deadlineMs = 5_000): Backends {
  return {
    accounts: createClient(AccountsServiceClient, {
      service: 'accounts',
      address: addresses.accounts,
      deadlineMs,
    }),
    jobs: createClient(JobsServiceClient, { service: 'jobs', address: addresses.jobs, deadlineMs }),
    stations: createClient(StationsServiceClient, {
      service: 'stations',
      address: addresses.stations,
      deadlineMs,
    }),
    webhooks: createClient(WebhooksServiceClient, {
      service: 'webhooks',
      address: addresses.webhooks,
      deadlineMs,
    }),
  };
}

export function closeBackends(backends: Backends): void {
  backends.accounts.close();
  backends.jobs.close();
  backends.stations.close();
  backends.webhooks.close();
}
