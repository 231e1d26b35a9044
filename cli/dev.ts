/**
 * `spool dev`: the whole system in one process on a fresh machine. It uses `DATABASE_URL` and
 * `NATS_URL` when set; otherwise an embedded PGlite (served over the PostgreSQL wire protocol, so
 * the code path is the same `pg` one as in production) and a child `nats-server`, both keeping their
 * data in `SPOOL_DATA_DIR` (`.spool/`).
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, type Env, readConfig } from '../lib/config.js';
import { generateCredential } from '../lib/credentials.js';
import { createLogger } from '../lib/logger.js';
import { startNatsServer } from '../lib/nats-server.js';
import { startPgliteServer } from '../lib/pglite-server.js';
import { generateServerKeyPair, serverKeysFrom } from '../lib/sealing.js';
import { serveMetrics, telemetry } from '../lib/telemetry.js';
import { spoolVersion } from '../lib/version.js';
import type { ServerKeys } from '../services/jobs/server.js';
import { generateSecretKey, parseSecretKey } from '../services/webhooks/crypto.js';
import { busLayoutOf, devConfig, streamLimitsOf } from './config.js';
import { checkPortsFree } from './ports.js';
import { webhookSettings } from './serve.js';
import { onShutdown } from './shutdown.js';
import { startSystem } from './system.js';

async function operatorToken(configured: string | undefined, file: string): Promise<string> {
  if (configured) return configured;
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing) return existing;
  } catch {
    // no token yet: make one below
  }
  const token = generateCredential('session').replace(/^svc_sess_/, 'spool_op_');
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/**
 * The key webhook secrets are encrypted under: `WEBHOOK_SECRET_KEY`, or the one kept in the data
 * folder, made on first start (a new key would make the stored secrets unreadable).
 */
async function webhookSecretKey(configured: Buffer | undefined, file: string): Promise<Buffer> {
  if (configured) return configured;
  try {
    return parseSecretKey(await readFile(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new Error(`${file} does not hold a webhook secret key: remove it to make a new one`);
    }
  }
  const key = generateSecretKey();
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return parseSecretKey(key);
}

/** The sealing key pair: from configuration, or made once and kept in `.spool/server-key`. */
async function devServerKeys(
  configured: string | undefined,
  previous: string | undefined,
  dataDir: string,
): Promise<ServerKeys> {
  if (configured) return serverKeysFrom(configured, previous);
  const file = join(dataDir, 'server-key');
  try {
    return serverKeysFrom((await readFile(file, 'utf8')).trim());
  } catch {
    const pair = await generateServerKeyPair();
    await writeFile(file, `${pair.privateKey}\n`, { mode: 0o600 });
    return serverKeysFrom(pair.privateKey);
  }
}

export async function runDev(env: Env): Promise<void> {
  const config = readConfig(env, devConfig);
  // Before the database and NATS start: a taken port found at bind time comes after all that.
  await checkPortsFree([
    { host: config.host, port: config.port, variable: 'PORT' },
    { host: config.host, port: config.stationPort, variable: 'STATION_PORT' },
    { host: config.host, port: config.metricsPort, variable: 'METRICS_PORT' },
  ]);
  const logger = createLogger({ name: 'spool-dev', level: config.logLevel });
  const dataDir = resolve(config.dataDir);
  await mkdir(dataDir, { recursive: true });
  // The database, NATS store, server key and operator token: this user's alone, whatever the
  // umask made of the files inside.
  await chmod(dataDir, 0o700);
  const stops: Array<() => Promise<void>> = [];

  let databaseUrl = config.databaseUrl;
  let poolMax = 10;
  if (!databaseUrl) {
    const pglite = await startPgliteServer({ dataDir: join(dataDir, 'pglite') });
    databaseUrl = pglite.url;
    poolMax = pglite.maxConnections;
    stops.unshift(() => pglite.stop());
    logger.info({ dataDir: join(dataDir, 'pglite') }, 'embedded PGlite started');
  }

  const layout = busLayoutOf(config);
  let natsUrl = config.natsUrl;
  if (!natsUrl && layout.regions.length > 1) {
    throw new ConfigError(['REGIONS names several regions: that needs NATS_URL, a supercluster']);
  }
  if (!natsUrl) {
    const storeDir = join(dataDir, 'nats');
    await mkdir(storeDir, { recursive: true });
    const nats = await startNatsServer({ storeDir, logger });
    natsUrl = nats.url;
    stops.unshift(() => nats.stop());
    logger.info({ url: nats.url }, 'child nats-server started');
  }

  const tokenFile = join(dataDir, 'admin-token');
  const token = await operatorToken(config.adminToken, tokenFile);
  const secretKey = await webhookSecretKey(
    config.webhookSecretKey,
    join(dataDir, 'webhook-secret-key'),
  );

  const system = await startSystem({
    databaseUrl,
    natsUrl,
    layout,
    logger,
    operatorToken: token,
    poolMax,
    bodyLimit: config.bodyLimit,
    maxDocumentBytes: config.maxDocumentBytes,
    uploadQuotaBytes: config.uploadQuotaBytes,
    linkHost: config.host,
    linkPort: config.stationPort,
    trustProxy: config.trustProxy,
    grpcDeadlineMs: config.grpcDeadlineMs,
    keyCacheTtlMs: config.keyCacheTtlMs,
    publicRateLimit: config.publicRateLimit,
    keyRateLimit: config.keyRateLimit,
    eventStreams: streamLimitsOf(config),
    // On a laptop, documents may come from local servers (DESIGN §5).
    fetchAllowInsecure: true,
    serverKeys: await devServerKeys(config.serverPrivateKey, config.serverPreviousKeys, dataDir),
    // On a laptop, receivers are local: http:// and private addresses are allowed (DESIGN §5).
    webhooks: webhookSettings(config, secretKey, true),
    // On a laptop the console is served over plain http, where a Secure cookie is never sent.
    secureCookies: false,
    publicUrl: config.publicUrl,
  });
  stops.unshift(() => system.stop(config.shutdownGraceMs));
  stops.push(() => telemetry().shutdown());
  const gateway = await system.startGateway(config.host, config.port);
  const metricsServer = await serveMetrics(config.host, config.metricsPort);
  if (metricsServer) stops.push(async () => void metricsServer.server.close());

  process.stdout.write(
    [
      '',
      `Spool is running at ${gateway.url}`,
      `  version ${spoolVersion()}`,
      `  station agents connect to ${system.linkAddress}`,
      ...(metricsServer
        ? [`  metrics at http://${config.host}:${metricsServer.port}/metrics`]
        : []),
      `  operator token: ${config.adminToken ? '(from SPOOL_ADMIN_TOKEN)' : token}`,
      config.adminToken ? '' : `  (also in ${tokenFile}, which spool admin reads)`,
      '',
    ].join('\n'),
  );

  onShutdown(logger, async () => {
    for (const stop of stops) await stop();
  });
}
