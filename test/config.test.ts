import test from 'ava';
import { accountsConfig, gatewayConfig } from '../cli/config.js';
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
