import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { startTestNats } from './helpers/nats.js';
import { freePort } from './helpers/ports.js';
import { createTestDatabase } from './helpers/postgres.js';
import { runSpool, spawnSpool } from './helpers/spool.js';

test('the README walk-through works against spool dev with its embedded database and NATS', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'spool-dev-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const env = { PORT: String(port), SPOOL_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  const dev = spawnSpool(['dev'], env);
  t.teardown(() => dev.stop());
  await dev.waitFor(/Spool is running at/, 60_000);

  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  t.true(dev.output().includes(token), 'spool dev prints the operator token');
  const adminEnv = { SPOOL_URL: `http://127.0.0.1:${port}`, SPOOL_DATA_DIR: dataDir };

  const org = await runSpool(['admin', 'org', 'create', '--name', 'Acme Print'], adminEnv);
  t.is(org.code, 0, org.stderr);
  const orgId = JSON.parse(org.stdout).org.id as string;

  const created = await runSpool(
    [
      'admin',
      'key',
      'create',
      '--org',
      orgId,
      '--mode',
      'live',
      '--scope',
      'jobs:write',
      '--scope',
      'jobs:read',
    ],
    adminEnv,
  );
  t.is(created.code, 0, created.stderr);
  const { key, secret } = JSON.parse(created.stdout) as { key: { id: string }; secret: string };

  const me = await fetch(`http://127.0.0.1:${port}/v1/key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  t.is(me.status, 200);
  t.deepEqual(await me.json(), {
    id: key.id,
    org_id: orgId,
    org_name: 'Acme Print',
    live: true,
    scopes: ['jobs:write', 'jobs:read'],
  });

  const listed = await runSpool(['admin', 'key', 'list', '--org', orgId], adminEnv);
  t.is(JSON.parse(listed.stdout).items.length, 1);

  const revoked = await runSpool(
    ['admin', 'key', 'revoke', '--org', orgId, '--id', key.id],
    adminEnv,
  );
  t.is(revoked.code, 0, revoked.stderr);
  const after = await fetch(`http://127.0.0.1:${port}/v1/key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  t.is(after.status, 401);

  const bad = await runSpool(
    ['admin', 'key', 'create', '--org', orgId, '--scope', 'jobs:nope'],
    adminEnv,
  );
  t.is(bad.code, 1);
  t.is(JSON.parse(bad.stderr).error.code, 'invalid');

  t.is(await dev.stop(), 0);
  // The state outlives a restart.
  const again = spawnSpool(['dev'], env);
  t.teardown(() => again.stop());
  await again.waitFor(/Spool is running at/, 60_000);
  const orgAgain = await runSpool(['admin', 'org', 'get', orgId], adminEnv);
  t.is(JSON.parse(orgAgain.stdout).org.name, 'Acme Print');
  t.is(await again.stop(), 0);
});

test('spool serve runs each component as its own process, after spool migrate', async (t) => {
  const [db, nats] = await Promise.all([createTestDatabase(), startTestNats()]);
  t.teardown(async () => {
    await nats.stop();
    await db.drop();
  });
  const migrated = await runSpool(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  t.is(migrated.code, 0, migrated.stderr);

  const grpcPort = await freePort();
  const accounts = spawnSpool(['serve', 'accounts'], {
    DATABASE_URL: db.url,
    NATS_URL: nats.url,
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
  });
  t.teardown(() => accounts.stop());
  await accounts.waitFor(/accounts serving gRPC/);

  const httpPort = await freePort();
  const gateway = spawnSpool(['serve', 'gateway'], {
    NATS_URL: nats.url,
    ACCOUNTS_ADDR: `127.0.0.1:${grpcPort}`,
    SPOOL_ADMIN_TOKEN: 'operator-secret',
    HOST: '127.0.0.1',
    PORT: String(httpPort),
  });
  t.teardown(() => gateway.stop());
  await gateway.waitFor(/gateway listening/);

  const adminEnv = {
    SPOOL_URL: `http://127.0.0.1:${httpPort}`,
    SPOOL_ADMIN_TOKEN: 'operator-secret',
  };
  const org = await runSpool(['admin', 'org', 'create', '--name', 'Split Co'], adminEnv);
  t.is(org.code, 0, org.stderr);
  const orgId = JSON.parse(org.stdout).org.id as string;
  const key = await runSpool(
    ['admin', 'key', 'create', '--org', orgId, '--mode', 'test'],
    adminEnv,
  );
  const secret = JSON.parse(key.stdout).secret as string;
  const me = await fetch(`http://127.0.0.1:${httpPort}/v1/key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  t.is(me.status, 200);
  t.is(((await me.json()) as { live: boolean }).live, false);

  const ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
  t.is(ready.status, 200);
  t.is(await gateway.stop(), 0);
  t.is(await accounts.stop(), 0);
  t.false(gateway.output().includes(secret), 'a key was logged');
  t.false(gateway.output().includes('operator-secret'), 'the operator token was logged');
});

test('spool serve with missing configuration names every missing variable and exits 1', async (t) => {
  const res = await runSpool(['serve', 'gateway'], { PORT: 'x' });
  t.is(res.code, 1);
  for (const name of ['NATS_URL', 'ACCOUNTS_ADDR', 'SPOOL_ADMIN_TOKEN', 'PORT']) {
    t.true(res.stderr.includes(name), `${name} missing from: ${res.stderr}`);
  }
});
