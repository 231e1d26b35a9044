/**
 * The accounts deployable: `startAccounts` builds the service from the connections it is given
 * (used by `spool serve accounts` and `spool dev`).
 */
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { AccountsServiceService } from '../../gen/spool/v1/accounts.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { adaptServer, type GrpcService } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { MigrationSet } from '../../lib/migrate.js';
import { OutboxRelay } from '../../lib/outbox.js';
import { RetentionSweeper } from '../../lib/retention-sweeper.js';
import { createAuditServer, createAuditStore } from './audit.js';
import { createAuditRetentionStore } from './audit-retention.js';
import { OUTBOX_TABLE } from './outbox.js';
import { createPeopleServer, type SessionSettings } from './people-server.js';
import { createPeopleStore } from './people-store.js';
import { createAccountsServer } from './server.js';
import { createAccountsStore } from './store.js';

export const migrations: MigrationSet = {
  service: 'accounts',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface AccountsDeps {
  pool: pg.Pool;
  nc: NatsConnection;
  logger: Logger;
  clock: Clock;
  /** Session expiry, invitation lifetime and sign-in limits; the defaults of SESSION_DEFAULTS. */
  sessions?: Partial<SessionSettings>;
  /** How often the audit log's retention sweep runs; by default every ten minutes. */
  auditSweepIntervalMs?: number;
}

export interface AccountsPart {
  grpc: GrpcService;
  relay: OutboxRelay;
  /** The audit log's retention sweep, for tests that move the clock and sweep. */
  auditSweeper: RetentionSweeper;
  stop(): Promise<void>;
}

export function createAccounts(deps: AccountsDeps): AccountsPart {
  const logger = deps.logger.child({ service: 'accounts' });
  const relay = new OutboxRelay({ pool: deps.pool, nc: deps.nc, table: OUTBOX_TABLE, logger });
  const store = createAccountsStore(deps.pool, deps.clock);
  const people = createPeopleServer({
    store: createPeopleStore(deps.pool, deps.clock),
    clock: deps.clock,
    ...(deps.sessions ? { settings: deps.sessions } : {}),
    onAnnounced: () => relay.kick(),
  });
  const server = createAccountsServer({
    store,
    clock: deps.clock,
    onAnnounced: () => relay.kick(),
    people,
    audit: createAuditServer(createAuditStore(deps.pool, deps.clock)),
  });
  const auditRetention = createAuditRetentionStore(deps.pool);
  const auditSweeper = new RetentionSweeper({
    what: 'audit log',
    deleteBefore: (cutoff, limit) => auditRetention.deleteBefore(cutoff, limit),
    retentionDays: async () => (await store.getSettings()).auditRetentionDays,
    clock: deps.clock,
    logger,
    ...(deps.auditSweepIntervalMs === undefined ? {} : { intervalMs: deps.auditSweepIntervalMs }),
  });
  relay.start();
  auditSweeper.start();
  return {
    grpc: {
      name: 'spool.v1.AccountsService',
      definition: AccountsServiceService,
      implementation: adaptServer(server, logger),
    },
    relay,
    auditSweeper,
    async stop() {
      await auditSweeper.stop();
      await relay.stop();
    },
  };
}
