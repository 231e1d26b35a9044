/** The gateway's gRPC clients of the services behind it. */
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import { type AsyncClient, createClient } from '../lib/grpc.js';

export type AccountsClient = AsyncClient<AccountsServiceClient>;
export type JobsClient = AsyncClient<JobsServiceClient>;
export type StationsClient = AsyncClient<StationsServiceClient>;

export interface Backends {
  accounts: AccountsClient;
  jobs: JobsClient;
  stations: StationsClient;
}

export interface BackendAddresses {
  accounts: string;
  jobs: string;
  stations: string;
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
  };
}

export function closeBackends(backends: Backends): void {
  backends.accounts.close();
  backends.jobs.close();
  backends.stations.close();
}
