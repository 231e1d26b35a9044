/** The gateway's gRPC clients of the services behind it. */
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { type AsyncClient, createClient } from '../lib/grpc.js';

export type AccountsClient = AsyncClient<AccountsServiceClient>;

export interface Backends {
  accounts: AccountsClient;
}

export interface BackendAddresses {
  accounts: string;
}

export function connectBackends(addresses: BackendAddresses, deadlineMs = 5_000): Backends {
  return {
    accounts: createClient(AccountsServiceClient, {
      service: 'accounts',
      address: addresses.accounts,
      deadlineMs,
    }),
  };
}

export function closeBackends(backends: Backends): void {
  backends.accounts.close();
}
