/**
 * The environment variables each `spool` command reads, declared once. README's configuration table
 * lists the same variables.
 */
import { address, bool, int, logLevel, optionalStr, port, str, url } from '../lib/config.js';

const common = {
  logLevel: logLevel(),
  shutdownGraceMs: int('SHUTDOWN_GRACE_MS', {
    description: 'milliseconds to finish work in flight after SIGTERM',
    default: 10_000,
    min: 0,
    max: 600_000,
  }),
};

const database = {
  databaseUrl: url('DATABASE_URL', ['postgres', 'postgresql'], {
    description: 'PostgreSQL/CockroachDB connection URL',
  }),
};

const nats = {
  natsUrl: str('NATS_URL', { description: 'NATS server URL(s), comma separated' }),
};

const grpcServer = {
  grpcHost: str('GRPC_HOST', { description: 'address the gRPC server binds', default: '0.0.0.0' }),
  grpcPort: port('GRPC_PORT', { description: 'port of the gRPC server', default: 50051 }),
};

const gatewayOnly = {
  bodyLimit: int('BODY_LIMIT_BYTES', {
    description: 'largest JSON request body accepted',
    default: 1024 * 1024,
    min: 1024,
    max: 256 * 1024 * 1024,
  }),
  trustProxy: bool('TRUST_PROXY', {
    description: 'take the client address from X-Forwarded-For',
    default: false,
  }),
  grpcDeadlineMs: int('GRPC_DEADLINE_MS', {
    description: 'deadline of each call to a service',
    default: 5_000,
    min: 100,
    max: 120_000,
  }),
  keyCacheTtlMs: int('KEY_CACHE_TTL_MS', {
    description: 'how long a gateway trusts a looked-up API key',
    default: 30_000,
    min: 0,
    max: 600_000,
  }),
};

const documents = {
  maxDocumentBytes: int('MAX_DOCUMENT_BYTES', {
    description: 'largest document a job may carry',
    default: 16 * 1024 * 1024,
    min: 1024,
    max: 64 * 1024 * 1024,
  }),
};

export const migrateConfig = { ...common, ...database };

export const accountsConfig = { ...common, ...database, ...nats, ...grpcServer };

export const jobsConfig = {
  ...common,
  ...database,
  ...nats,
  ...grpcServer,
  ...documents,
  stationsAddr: address('STATIONS_ADDR', { description: 'host:port of the stations service' }),
};

export const stationsConfig = {
  ...common,
  ...database,
  ...nats,
  ...grpcServer,
  stationHost: str('STATION_HOST', {
    description: 'address the station link binds',
    default: '0.0.0.0',
  }),
  stationPort: port('STATION_PORT', { description: 'port of the station link', default: 7070 }),
  jobsAddr: address('JOBS_ADDR', { description: 'host:port of the jobs service' }),
};

export const gatewayConfig = {
  ...common,
  ...nats,
  ...gatewayOnly,
  host: str('HOST', { description: 'address the HTTP server binds', default: '0.0.0.0' }),
  port: port('PORT', { description: 'HTTP port', default: 8080 }),
  ...documents,
  accountsAddr: address('ACCOUNTS_ADDR', { description: 'host:port of the accounts service' }),
  jobsAddr: address('JOBS_ADDR', { description: 'host:port of the jobs service' }),
  stationsAddr: address('STATIONS_ADDR', { description: 'host:port of the stations service' }),
  adminToken: str('SPOOL_ADMIN_TOKEN', { description: 'the operator token for /admin/v1' }),
};

export const devConfig = {
  ...common,
  ...gatewayOnly,
  ...documents,
  host: str('HOST', { description: 'address the HTTP server binds', default: '127.0.0.1' }),
  port: port('PORT', { description: 'HTTP port', default: 8080 }),
  stationPort: port('STATION_PORT', { description: 'station link port', default: 7070 }),
  databaseUrl: optionalStr('DATABASE_URL', 'PostgreSQL URL; embedded PGlite when unset'),
  natsUrl: optionalStr('NATS_URL', 'NATS URL; a child nats-server when unset'),
  adminToken: optionalStr('SPOOL_ADMIN_TOKEN', 'operator token; generated when unset'),
  dataDir: str('SPOOL_DATA_DIR', {
    description: 'where spool dev keeps its state',
    default: '.spool',
  }),
};

export const adminClientConfig = {
  url: url('SPOOL_URL', ['http', 'https'], {
    description: 'where the gateway answers',
    default: 'http://localhost:8080',
  }),
  adminToken: optionalStr(
    'SPOOL_ADMIN_TOKEN',
    'operator token; read from .spool/admin-token when unset',
  ),
  dataDir: str('SPOOL_DATA_DIR', {
    description: 'where spool dev keeps its state',
    default: '.spool',
  }),
};
