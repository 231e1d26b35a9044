/**
 * The environment variables each `spool` command reads, declared once. README's configuration table
 * lists the same variables.
 */

import { DEFAULT_EVENT_STREAM_OPTIONS, type StreamLimits } from '../gateway/event-stream.js';
import { type BusLayout, REGION_PATTERN, SINGLE_REGION } from '../lib/bus.js';
import {
  address,
  bool,
  ConfigError,
  int,
  logLevel,
  optionalSecret,
  optionalStr,
  port,
  secretStr,
  str,
  url,
  type Variable,
} from '../lib/config.js';
import { parseSecretKey } from '../services/webhooks/crypto.js';
import { WEBHOOK_DEFAULTS } from '../services/webhooks/defaults.js';

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

function regionName(raw: string): string {
  if (!REGION_PATTERN.test(raw)) {
    throw new Error('must be a region name: lower-case letters, digits and -, at most 32');
  }
  return raw;
}

const nats = {
  natsUrl: str('NATS_URL', { description: 'NATS server URL(s), comma separated' }),
  natsCreds: optionalStr('NATS_CREDS', 'path of a NATS credentials (.creds) file'),
  natsReplicas: int('NATS_REPLICAS', {
    description: 'copies JetStream keeps of each stream: 3 on a NATS cluster, 1 on one server',
    default: 1,
    min: 1,
    max: 5,
  }),
  region: {
    name: 'REGION',
    description: 'the region this process runs in, the name of its NATS cluster',
    parse: regionName,
    fallback: () => SINGLE_REGION.region,
  } as Variable<string>,
  regions: {
    name: 'REGIONS',
    description:
      'every region of the installation, comma separated, the first holding the installation-wide streams; REGION alone when unset',
    parse: (raw: string) => raw.split(',').map((r) => regionName(r.trim())),
    fallback: () => undefined,
  } as Variable<string[] | undefined>,
};

/**
 * The bus layout of a process's configuration.
 *
 * @throws ConfigError when REGION is not one of REGIONS.
 */
export function busLayoutOf(config: {
  region: string;
  regions: string[] | undefined;
  natsReplicas: number;
}): BusLayout {
  const regions = config.regions ?? [config.region];
  if (!regions.includes(config.region)) {
    throw new ConfigError([
      `REGION ${config.region} is not one of REGIONS (${regions.join(', ')})`,
    ]);
  }
  if (new Set(regions).size !== regions.length) {
    throw new ConfigError([`REGIONS names a region twice (${regions.join(', ')})`]);
  }
  return { region: config.region, regions, replicas: config.natsReplicas };
}

const grpcServer = {
  grpcHost: str('GRPC_HOST', { description: 'address the gRPC server binds', default: '0.0.0.0' }),
  grpcPort: port('GRPC_PORT', { description: 'port of the gRPC server', default: 50051 }),
  metricsPort: port('METRICS_PORT', {
    description: 'port serving GET /metrics (Prometheus text), on GRPC_HOST; 0: not served',
    default: 0,
  }),
};

/** The gateway's and `spool dev`'s metrics, kept off the API port. */
const httpMetrics = {
  metricsPort: port('METRICS_PORT', {
    description: 'port serving GET /metrics (Prometheus text), on HOST; 0: not served',
    default: 0,
  }),
};

const gatewayOnly = {
  bodyLimit: int('BODY_LIMIT_BYTES', {
    description: 'largest JSON request body accepted',
    default: 1024 * 1024,
    min: 1024,
    max: 256 * 1024 * 1024,
  }),
  trustProxy: proxyHops(),
  grpcDeadlineMs: int('GRPC_DEADLINE_MS', {
    description: 'deadline of each call to a service',
    default: 5_000,
    min: 100,
    max: 120_000,
  }),
  publicRateLimit: int('PUBLIC_RATE_LIMIT', {
    description: 'requests a client address may make to /v1/public a minute, across replicas',
    default: 30,
    min: 1,
    max: 1_000_000,
  }),
  keyRateLimit: int('KEY_RATE_LIMIT', {
    description: 'requests an API key may make a minute to one gateway replica; 0 for no limit',
    default: 6_000,
    min: 0,
    max: 10_000_000,
  }),
  streamsPerCredential: int('STREAMS_PER_CREDENTIAL', {
    description:
      'event streams one API key or signed-in person may hold open at once on one gateway replica',
    default: DEFAULT_EVENT_STREAM_OPTIONS.streamsPerCredential,
    min: 1,
    max: 1_000_000,
  }),
  streamsPerOrg: int('STREAMS_PER_ORG', {
    description: 'event streams of one organization open at once on one gateway replica',
    default: DEFAULT_EVENT_STREAM_OPTIONS.streamsPerOrg,
    min: 1,
    max: 1_000_000,
  }),
  publicUrl: {
    ...url('PUBLIC_URL', ['http', 'https'], {
      description:
        'the public base URL of the gateway, for the links it hands out (invitations); else the request’s origin',
    }),
    fallback: () => undefined,
  } as Variable<string | undefined>,
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

/** The bounds on open event streams a gateway takes from its configuration. */
export function streamLimitsOf(config: {
  streamsPerCredential: number;
  streamsPerOrg: number;
}): StreamLimits {
  return {
    streamsPerCredential: config.streamsPerCredential,
    streamsPerOrg: config.streamsPerOrg,
  };
}

/** UPLOAD_QUOTA_BYTES, read by the jobs service alone. */
function uploadQuota(): Variable<number> {
  return int('UPLOAD_QUOTA_BYTES', {
    description: "bytes of one organization's uploads kept at once (until used up by retention)",
    default: 1024 * 1024 * 1024,
    min: 1024 * 1024,
    max: 1024 * 1024 * 1024 * 1024,
  });
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A comma list of durations such as `30s,2m,10m`, in milliseconds. */
/**
 * TRUST_PROXY: how many proxies of the operator's stand in front of the gateway, each adding to
 * `X-Forwarded-For` the address it was reached from: `false` (none: the connection's address is
 * the client's), `true` (one, an ingress controller) or their number. The client address is the
 * one the outermost of them saw; what a client wrote into the header itself, further left, is not
 * believed.
 */
function proxyHops(): Variable<number> {
  const description = 'proxies of yours in front of the gateway adding to X-Forwarded-For';
  return {
    name: 'TRUST_PROXY',
    description,
    fallback: () => 0,
    parse(raw) {
      const v = raw.trim().toLowerCase();
      if (['true', 'yes', 'on'].includes(v)) return 1;
      if (['false', 'no', 'off'].includes(v)) return 0;
      if (/^\d{1,2}$/.test(v) && Number(v) <= 10) return Number(v);
      throw new Error('must be false, true (one proxy) or the number of proxies, 0 to 10');
    },
  };
}

function durations(name: string, description: string, fallback: string): Variable<number[]> {
  const parse = (raw: string) =>
    raw.split(',').map((part) => {
      const m = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(part);
      if (!m) throw new Error('must be a comma list of durations such as 30s,2m,1h or 500ms');
      return Number(m[1]) * (DURATION_UNITS[m[2] as string] as number);
    });
  return { name, description, parse, fallback: () => parse(fallback) };
}

function secretKey(required: boolean): Variable<Buffer | undefined> {
  const description = 'base64 of the 32-byte key webhook secrets are encrypted under';
  return {
    name: 'WEBHOOK_SECRET_KEY',
    description: required
      ? description
      : `${description}; generated into SPOOL_DATA_DIR when unset`,
    parse: parseSecretKey,
    secret: true,
    ...(required ? {} : { fallback: () => undefined }),
  };
}

/** How the webhooks service delivers; the defaults are the specification's. */
const webhookTuning = {
  webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', {
    description: 'milliseconds a webhook receiver has to answer',
    default: WEBHOOK_DEFAULTS.timeoutMs,
    min: 100,
    max: 60_000,
  }),
  webhookRetryWaitsMs: durations(
    'WEBHOOK_RETRY_WAITS',
    'waits between webhook attempts',
    '30s,2m,10m,30m,2h,6h,12h',
  ),
  webhookGraceSeconds: int('WEBHOOK_SECRET_GRACE_SECONDS', {
    description: 'seconds a rotated-out webhook secret keeps signing',
    default: WEBHOOK_DEFAULTS.rotationGraceMs / 1000,
    min: 0,
    max: 604_800,
  }),
  webhookMaxPayloadBytes: int('WEBHOOK_MAX_PAYLOAD_BYTES', {
    description: 'largest webhook body sent',
    default: WEBHOOK_DEFAULTS.maxPayloadBytes,
    min: 1024,
    max: 16 * 1024 * 1024,
  }),
  webhookConcurrency: int('WEBHOOK_CONCURRENCY', {
    description: 'webhook attempts in flight at once per replica',
    default: WEBHOOK_DEFAULTS.concurrency,
    min: 1,
    max: 10_000,
  }),
  webhookEndpointConcurrency: int('WEBHOOK_ENDPOINT_CONCURRENCY', {
    description: 'webhook attempts in flight at once to one endpoint per replica',
    default: WEBHOOK_DEFAULTS.endpointConcurrency,
    min: 1,
    max: 1_000,
  }),
  webhookOrgConcurrency: int('WEBHOOK_ORG_CONCURRENCY', {
    description:
      "webhook attempts in flight at once to one organization's endpoints per replica (0: half of WEBHOOK_CONCURRENCY)",
    default: 0,
    min: 0,
    max: 10_000,
  }),
  webhookPollMs: int('WEBHOOK_POLL_MS', {
    description: 'how often the webhook worker looks for due deliveries',
    default: WEBHOOK_DEFAULTS.pollMs,
    min: 10,
    max: 60_000,
  }),
  webhookLeaseMs: int('WEBHOOK_LEASE_MS', {
    description: 'how long a claimed webhook attempt is held (0: the timeout plus 30 s)',
    default: 0,
    min: 0,
    max: 3_600_000,
  }),
};

const sealing = {
  serverPrivateKey: optionalStr(
    'SPOOL_SERVER_PRIVATE_KEY',
    'the X25519 private key sealed content is opened with (base64url, 32 bytes)',
  ),
  serverPreviousKeys: optionalStr(
    'SPOOL_SERVER_PREVIOUS_KEYS',
    'earlier private keys still accepted after a rotation, comma separated',
  ),
};

export const migrateConfig = { ...common, ...database };

export const accountsConfig = { ...common, ...database, ...nats, ...grpcServer };

export const jobsConfig = {
  ...common,
  ...database,
  ...nats,
  ...grpcServer,
  ...documents,
  ...sealing,
  uploadQuotaBytes: uploadQuota(),
  stationsAddr: address('STATIONS_ADDR', { description: 'host:port of the stations service' }),
  accountsAddr: address('ACCOUNTS_ADDR', { description: 'host:port of the accounts service' }),
  fetchAllowInsecure: bool('SPOOL_FETCH_ALLOW_INSECURE', {
    description: 'let content URIs use http:// and private addresses (never in production)',
    default: false,
  }),
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
  agentDownloadUrl: str('AGENT_DOWNLOAD_URL', {
    description:
      'where agents download release tarballs: the gateway’s public /agent/v1/releases address',
    default: 'http://127.0.0.1:8080/agent/v1/releases',
  }),
};

export const webhooksConfig = {
  ...common,
  ...database,
  ...nats,
  ...grpcServer,
  ...webhookTuning,
  secretKey: secretKey(true),
  accountsAddr: address('ACCOUNTS_ADDR', {
    description: 'host:port of the accounts service (for the delivery log retention setting)',
  }),
  allowInsecure: bool('SPOOL_WEBHOOKS_ALLOW_INSECURE', {
    description: 'allow http:// webhook URLs and private addresses',
    default: false,
  }),
};

export const gatewayConfig = {
  ...common,
  ...nats,
  ...gatewayOnly,
  ...httpMetrics,
  host: str('HOST', { description: 'address the HTTP server binds', default: '0.0.0.0' }),
  port: port('PORT', { description: 'HTTP port', default: 8080 }),
  shutdownDelayMs: int('SHUTDOWN_DELAY_MS', {
    description: 'milliseconds to keep serving after SIGTERM with /readyz answering 503',
    default: 0,
    min: 0,
    max: 120_000,
  }),
  ...documents,
  accountsAddr: address('ACCOUNTS_ADDR', { description: 'host:port of the accounts service' }),
  jobsAddr: address('JOBS_ADDR', { description: 'host:port of the jobs service' }),
  stationsAddr: address('STATIONS_ADDR', { description: 'host:port of the stations service' }),
  webhooksAddr: address('WEBHOOKS_ADDR', { description: 'host:port of the webhooks service' }),
  adminToken: secretStr('SPOOL_ADMIN_TOKEN', {
    description: 'the operator token for /admin/v1',
    minLength: 16,
  }),
  adminTokenPrevious: optionalSecret('SPOOL_ADMIN_TOKEN_PREVIOUS', {
    description:
      'during a rotation of the operator token, the token SPOOL_ADMIN_TOKEN replaces: accepted too, until unset',
    minLength: 16,
  }),
};

export const devConfig = {
  ...common,
  ...gatewayOnly,
  ...httpMetrics,
  ...documents,
  ...sealing,
  uploadQuotaBytes: uploadQuota(),
  host: str('HOST', { description: 'address the HTTP server binds', default: '127.0.0.1' }),
  port: port('PORT', { description: 'HTTP port', default: 8080 }),
  stationPort: port('STATION_PORT', { description: 'station link port', default: 7070 }),
  databaseUrl: optionalStr('DATABASE_URL', 'PostgreSQL URL; embedded PGlite when unset'),
  natsUrl: optionalStr('NATS_URL', 'NATS URL; a child nats-server when unset'),
  // With NATS_URL, `spool dev` can be one region of several (the benchmark's regions scenario).
  natsReplicas: nats.natsReplicas,
  region: nats.region,
  regions: nats.regions,
  adminToken: optionalStr('SPOOL_ADMIN_TOKEN', 'operator token; generated when unset'),
  ...webhookTuning,
  webhookSecretKey: secretKey(false),
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
  timeoutMs: int('SPOOL_ADMIN_TIMEOUT_MS', {
    description: 'how long a spool admin command waits for the gateway to answer',
    default: 30_000,
    min: 1,
  }),
};
