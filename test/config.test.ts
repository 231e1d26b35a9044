import test from 'ava';
import { accountsConfig, gatewayConfig, streamLimitsOf, webhooksConfig } from '../cli/config.js';
import { ConfigError, readConfig } from '../lib/config.js';

test('every missing and bad variable is named at once', (t) => {
  const err = t.throws(() => readConfig({ PORT: 'eighty', TRUST_PROXY: 'maybe' }, gatewayConfig));
  t.true(err instanceof ConfigError);
  const problems = (err as ConfigError).problems.join('\n');
  for (const name of ['NATS_URL', 'ACCOUNTS_ADDR', 'SPOOL_ADMIN_TOKEN', 'PORT', 'TRUST_PROXY']) {
    t.true(problems.includes(name), `${name} not named in:\n${problems}`);
  }
  t.regex(problems, /PORT must be a whole number from 0 to 65535 \(got "eighty"\)/);
});

test('defaults apply and values parse', (t) => {
  const config = readConfig(
    {
      DATABASE_URL: 'postgresql://spool@db:26257/spool',
      NATS_URL: 'nats://nats:4222',
      GRPC_PORT: '6000',
    },
    accountsConfig,
  );
  t.is(config.grpcPort, 6000);
  t.is(config.grpcHost, '0.0.0.0');
  t.is(config.logLevel, 'info');
});

test('a database URL of another scheme is refused', (t) => {
  const err = t.throws(() =>
    readConfig({ DATABASE_URL: 'mysql://x', NATS_URL: 'nats://n:4222' }, accountsConfig),
  ) as ConfigError;
  t.regex(err.message, /DATABASE_URL must be a URL with scheme postgres or postgresql/);
});

test("a secret is never repeated in an error, nor a URL's password; a short operator token is refused", (t) => {
  const err = t.throws(() =>
    readConfig(
      {
        DATABASE_URL: 'mysql://spool:hunter2-password@db/spool',
        NATS_URL: 'nats://nats:4222',
        WEBHOOK_SECRET_KEY: 'deadbeef-not-base64-of-32-bytes',
      },
      webhooksConfig,
    ),
  ) as ConfigError;
  t.regex(err.message, /WEBHOOK_SECRET_KEY must be/);
  t.regex(err.message, /DATABASE_URL .*"mysql:\/\/spool:\*\*\*@db\/spool"/);
  t.false(err.message.includes('deadbeef'), err.message);
  t.false(err.message.includes('hunter2'), err.message);

  const short = t.throws(() =>
    readConfig(
      {
        NATS_URL: 'nats://nats:4222',
        ACCOUNTS_ADDR: 'a:1',
        JOBS_ADDR: 'j:1',
        STATIONS_ADDR: 's:1',
        WEBHOOKS_ADDR: 'w:1',
        SPOOL_ADMIN_TOKEN: 'admin',
        SPOOL_ADMIN_TOKEN_PREVIOUS: 'old',
      },
      gatewayConfig,
    ),
  ) as ConfigError;
  t.deepEqual(short.problems, [
    'SPOOL_ADMIN_TOKEN must be at least 16 characters: use a random one, such as openssl rand -base64 32 makes',
    'SPOOL_ADMIN_TOKEN_PREVIOUS must be at least 16 characters: use a random one, such as openssl rand -base64 32 makes',
  ]);
});

test('service addresses take host:port or a gRPC target naming several replicas', (t) => {
  const base = {
    NATS_URL: 'nats://nats:4222',
    SPOOL_ADMIN_TOKEN: 'an-operator-token-of-some-length',
    JOBS_ADDR: 'spool-jobs:50051',
    WEBHOOKS_ADDR: 'spool-webhooks:50051',
  };
  for (const accepted of [
    'localhost:50051',
    '[::1]:50051',
    'dns:///spool-accounts.spool.svc.cluster.local:50051',
    'dns://10.96.0.10:53/spool-accounts.spool.svc:50051',
    'ipv4:127.0.0.1:50051,127.0.0.1:50052',
    'ipv6:[::1]:50051,[::1]:50052',
    'unix:/run/spool/accounts.sock',
  ]) {
    const config = readConfig(
      { ...base, ACCOUNTS_ADDR: accepted, STATIONS_ADDR: accepted },
      gatewayConfig,
    );
    t.is(config.accountsAddr, accepted);
  }
  for (const refused of [
    'spool-accounts',
    'spool-accounts:0',
    'spool-accounts:70000',
    'dns:///spool-accounts',
    'ipv4:127.0.0.1:50051,localhost:50052',
    'ipv4:300.0.0.1:50051',
    'ipv6:::1:50051',
    'http://spool-accounts:50051',
  ]) {
    const err = t.throws(() =>
      readConfig({ ...base, ACCOUNTS_ADDR: refused, STATIONS_ADDR: 'x:1' }, gatewayConfig),
    ) as ConfigError;
    t.deepEqual(
      err.problems,
      [
        `ACCOUNTS_ADDR must be host:port, or a gRPC target such as dns:///host:port or ipv4:10.0.0.1:50051,10.0.0.2:50051 (got ${JSON.stringify(refused)})`,
      ],
      refused,
    );
  }
});

test("the gateway's bounds on open event streams default to 20 a key and 100 an organization, and can be set", (t) => {
  const base = {
    NATS_URL: 'nats://nats:4222',
    SPOOL_ADMIN_TOKEN: 'an-operator-token-of-some-length',
    ACCOUNTS_ADDR: 'spool-accounts:50051',
    JOBS_ADDR: 'spool-jobs:50051',
    STATIONS_ADDR: 'spool-stations:50051',
    WEBHOOKS_ADDR: 'spool-webhooks:50051',
  };
  const defaults = readConfig(base, gatewayConfig);
  t.deepEqual(streamLimitsOf(defaults), { streamsPerCredential: 20, streamsPerOrg: 100 });
  const set = readConfig(
    { ...base, STREAMS_PER_CREDENTIAL: '1000', STREAMS_PER_ORG: '1000' },
    gatewayConfig,
  );
  t.deepEqual(streamLimitsOf(set), { streamsPerCredential: 1000, streamsPerOrg: 1000 });
  const err = t.throws(() =>
    readConfig({ ...base, STREAMS_PER_CREDENTIAL: '0' }, gatewayConfig),
  ) as ConfigError;
  t.regex(err.message, /STREAMS_PER_CREDENTIAL must be/);
});
