import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { buildProgram } from '../cli/program.js';
import { spoolVersion } from '../lib/version.js';
import { CLUSTER_OPERATOR_TOKEN, startCluster } from './helpers/cluster.js';
import { freePort } from './helpers/ports.js';
import { createTestDatabase } from './helpers/postgres.js';
import { runSpool, spawnSpool } from './helpers/spool.js';
import { eventually } from './helpers/system.js';

// The walk-through reads loosely typed JSON as a shell user would.
// biome-ignore lint/suspicious/noExplicitAny: response bodies of several shapes
type Answer = Record<string, any>;

test('the README walk-through works against spool dev with its embedded database and NATS', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'spool-dev-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  // Made by spool dev itself, as .spool is.
  const dataDir = join(parent, '.spool');
  const port = await freePort();
  const stationPort = await freePort();
  const metricsPort = await freePort();
  const env = {
    PORT: String(port),
    STATION_PORT: String(stationPort),
    METRICS_PORT: String(metricsPort),
    SPOOL_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  const dev = spawnSpool(['dev'], env);
  t.teardown(() => dev.stop());
  // The embedded database is PostgreSQL compiled to WebAssembly: about 10 s to start alone, and
  // minutes beside a whole test run on two busy cores.
  await dev.waitFor(/Spool is running at/, 180_000);

  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  t.is((await stat(dataDir)).mode & 0o777, 0o700, 'the data directory is the user’s alone');
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
      '--scope',
      'printers:read',
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
    scopes: ['jobs:write', 'jobs:read', 'printers:read'],
  });

  // Tracing is off (no OTLP endpoint): requests are still counted, by route and status.
  const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  t.regex(
    scraped,
    /http_server_request_duration_count\{[^}]*http_request_method="GET"[^}]*http_response_status_code="200"[^}]*http_route="\/v1\/key"[^}]*\} 1/,
  );

  const listed = await runSpool(['admin', 'key', 'list', '--org', orgId], adminEnv);
  t.is(JSON.parse(listed.stdout).items.length, 1);

  // Printing a first page.
  const station = await runSpool(
    ['admin', 'station', 'create', '--org', orgId, '--name', 'Front desk'],
    adminEnv,
  );
  t.is(station.code, 0, station.stderr);
  const deviceToken = JSON.parse(station.stdout).token as string;
  const printed = join(dataDir, 'printed');
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      `127.0.0.1:${stationPort}`,
      '--token',
      deviceToken,
      '--printer',
      `desk=file:${printed}`,
      '--state-dir',
      join(dataDir, 'agent'),
    ],
    { LOG_LEVEL: 'warn' },
  );
  t.teardown(() => agent.stop());
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    }).then((r) => r.json() as Promise<Answer>);
  const printers = await eventually(
    () => api(`/v1/orgs/${orgId}/printers`),
    (body) => body.printers?.length === 1 && body.printers[0].station_online,
    30_000,
  );
  const job = await api(`/v1/orgs/${orgId}/jobs`, {
    method: 'POST',
    body: JSON.stringify({
      printer_id: printers.printers[0].id,
      title: 'Hello',
      content: { type: 'text', data: 'Hello, printer' },
    }),
  });
  t.is(job.job.status, 'queued');
  const done = await eventually(
    () => api(`/v1/orgs/${orgId}/jobs/${job.job.id}`),
    (body) => body.job.status === 'printed',
    30_000,
  );
  t.deepEqual(
    done.events.map((e: { status: string }) => e.status),
    ['queued', 'sent', 'printed'],
  );
  t.is(await readFile(join(printed, `${job.job.id}-1.txt`), 'utf8'), 'Hello, printer');
  t.is(await agent.stop(), 0);

  const revoked = await runSpool(
    ['admin', 'key', 'revoke', '--org', orgId, '--id', key.id],
    adminEnv,
  );
  t.is(revoked.code, 0, revoked.stderr);
  t.deepEqual(JSON.parse(revoked.stdout), { revoked: true, id: key.id });
  const after = await fetch(`http://127.0.0.1:${port}/v1/key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  t.is(after.status, 401);

  const modeless = await runSpool(
    ['admin', 'key', 'create', '--org', orgId, '--scope', 'jobs:read'],
    adminEnv,
  );
  t.is(modeless.code, 2, 'wrong usage exits 2, where an error the gateway answered exits 1');
  t.regex(modeless.stderr, /required option '--mode <mode>' not specified/);
  const unknownFlag = await runSpool(['admin', 'org', 'list', '--colour'], adminEnv);
  t.is(unknownFlag.code, 2);
  t.regex(unknownFlag.stderr, /unknown option '--colour'/);
  // The error and a pointer to the help, not the whole help after it.
  t.regex(unknownFlag.stderr, /\(add --help for the command’s options\)\n$/);
  t.notRegex(unknownFlag.stderr, /Usage:/);
  const bad = await runSpool(
    ['admin', 'key', 'create', '--org', orgId, '--mode', 'live', '--scope', 'jobs:nope'],
    adminEnv,
  );
  t.is(bad.code, 1);
  t.is(JSON.parse(bad.stderr).error.code, 'invalid');
  t.is(
    JSON.parse(bad.stderr).error.message,
    'scopes.0 must be one of: jobs:write, jobs:read, printers:read, printers:write, locations:read, webhooks:read, webhooks:write, orgs:read, orgs:write, stations:write',
  );

  const wrongToken = await runSpool(['admin', 'org', 'get', orgId], {
    ...adminEnv,
    SPOOL_ADMIN_TOKEN: 'not-the-token',
  });
  t.is(wrongToken.code, 1);
  const [body, hint] = wrongToken.stderr.trim().split('\n');
  t.regex(JSON.parse(body ?? '').error.message, /^wrong operator token/);
  t.regex(hint ?? '', /refused the operator token from SPOOL_ADMIN_TOKEN/);

  t.is(await dev.stop(), 0);
  // The state outlives a restart.
  const again = spawnSpool(['dev'], env);
  t.teardown(() => again.stop());
  await again.waitFor(/Spool is running at/, 180_000);
  const orgAgain = await runSpool(['admin', 'org', 'get', orgId], adminEnv);
  t.is(JSON.parse(orgAgain.stdout).org.name, 'Acme Print');
  // --org, as every other command takes it, says the same.
  const byFlag = await runSpool(['admin', 'org', 'get', '--org', orgId], adminEnv);
  t.deepEqual(JSON.parse(byFlag.stdout), JSON.parse(orgAgain.stdout));
  const twice = await runSpool(['admin', 'org', 'get', orgId, '--org', orgId], adminEnv);
  t.is(twice.code, 2);
  t.is(await again.stop(), 0);
});

test('spool serve runs each component as its own process, after spool migrate', async (t) => {
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  const adminEnv = { SPOOL_URL: cluster.url, SPOOL_ADMIN_TOKEN: CLUSTER_OPERATOR_TOKEN };
  const org = await runSpool(['admin', 'org', 'create', '--name', 'Split Co'], adminEnv);
  t.is(org.code, 0, org.stderr);
  const orgId = JSON.parse(org.stdout).org.id as string;
  const key = await runSpool(
    ['admin', 'key', 'create', '--org', orgId, '--mode', 'test'],
    adminEnv,
  );
  const secret = JSON.parse(key.stdout).secret as string;
  const me = await fetch(`${cluster.url}/v1/key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  t.is(me.status, 200);
  t.is(((await me.json()) as { live: boolean }).live, false);

  const ready = await fetch(`${cluster.url}/readyz`);
  t.is(ready.status, 200);
  const gateway = cluster.processes.get('gateway');
  t.is(await gateway?.stop(), 0);
  for (const proc of cluster.processes.values()) t.is(await proc.stop(), 0);
  const logs = [...cluster.processes.values()].map((p) => p.output()).join('\n');
  t.false(logs.includes(secret), 'a key was logged');
  t.false(logs.includes(CLUSTER_OPERATOR_TOKEN), 'the operator token was logged');
});

test('spool serve with missing configuration names every missing variable and exits 1', async (t) => {
  const res = await runSpool(['serve', 'gateway'], { PORT: 'x' });
  t.is(res.code, 1);
  for (const name of ['NATS_URL', 'ACCOUNTS_ADDR', 'JOBS_ADDR', 'SPOOL_ADMIN_TOKEN', 'PORT']) {
    t.true(res.stderr.includes(name), `${name} missing from: ${res.stderr}`);
  }
});

test('spool serve on a database that was never migrated says to run spool migrate, and exits 1', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const res = await runSpool(['serve', 'accounts'], {
    DATABASE_URL: db.url,
    // Never reached: the schema is checked first.
    NATS_URL: `nats://127.0.0.1:${await freePort()}`,
    GRPC_PORT: String(await freePort()),
    METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  t.is(res.code, 1);
  t.regex(
    res.stderr,
    /the database's schema is behind this version of Spool \(\d+ migrations not applied, accounts\/001_[a-z_]+\.sql first\): run spool migrate/,
  );
});

test('spool serve on a database that refuses it names DATABASE_URL', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const url = new URL(db.url);
  url.username = 'nobody_here';
  const res = await runSpool(['serve', 'accounts'], {
    DATABASE_URL: url.toString(),
    NATS_URL: `nats://127.0.0.1:${await freePort()}`,
    GRPC_PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  t.is(res.code, 1);
  t.regex(
    res.stderr,
    /cannot use the database \(DATABASE_URL\): role "nobody_here" does not exist/,
  );
});

test('spool serve stations with its gRPC and link ports the same refuses both, naming them', async (t) => {
  const port = String(await freePort());
  const res = await runSpool(['serve', 'stations'], {
    GRPC_PORT: port,
    STATION_PORT: port,
    METRICS_PORT: '0',
    DATABASE_URL: 'postgres://spool@127.0.0.1:1/spool',
    NATS_URL: 'nats://127.0.0.1:1',
    JOBS_ADDR: '127.0.0.1:1',
  });
  t.is(res.code, 1);
  t.true(
    res.stderr.includes(
      `port ${port} is given twice, as GRPC_PORT and STATION_PORT: give them different ports`,
    ),
    res.stderr,
  );
});

test('spool --version prints the version of package.json', async (t) => {
  const res = await runSpool(['--version'], {});
  t.is(res.code, 0, res.stderr);
  t.is(res.stdout.trim(), spoolVersion());
  t.regex(res.stdout.trim(), /^\d+\.\d+\.\d+/);
});

test('every command of spool --help, at every level, has a description', (t) => {
  const program = buildProgram({});
  const walk = (cmd: ReturnType<typeof buildProgram>, path: string[]) => {
    // The Commands section of the help this command prints: each line names a subcommand, and
    // a description follows on the same line.
    const help = cmd.helpInformation();
    for (const sub of cmd.commands) {
      const line = help.split('\n').find((l) => l.trimStart().startsWith(`${sub.name()} `));
      const shown = line
        ?.trim()
        .slice(sub.name().length)
        .replace(/^ *(\[options\]|<[^>]+>| )*/, '');
      t.truthy(shown, `spool ${[...path, sub.name()].join(' ')} has no description in --help`);
      walk(sub, [...path, sub.name()]);
    }
  };
  walk(program, []);
});

test('spool admin against a URL where nothing listens says it could not reach Spool, and why', async (t) => {
  const port = await freePort();
  const res = await runSpool(['admin', 'org', 'get', 'x'], {
    SPOOL_URL: `http://127.0.0.1:${port}`,
    SPOOL_ADMIN_TOKEN: 'token',
  });
  t.is(res.code, 1);
  t.is(
    res.stderr.trim(),
    `spool: could not reach Spool at http://127.0.0.1:${port} (ECONNREFUSED): is spool dev (or the gateway) running, and is SPOOL_URL right?`,
  );
});

test('spool admin against a server that never answers gives up after SPOOL_ADMIN_TIMEOUT_MS', async (t) => {
  // Takes connections and holds them, answering nothing, as a stuck proxy would.
  const held: Socket[] = [];
  const server = createServer((socket) => {
    held.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of held) s.destroy();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const res = await runSpool(['admin', 'org', 'list'], {
    SPOOL_URL: `http://127.0.0.1:${port}`,
    SPOOL_ADMIN_TOKEN: 'token',
    SPOOL_ADMIN_TIMEOUT_MS: '300',
  });
  t.is(res.code, 1);
  t.is(
    res.stderr.trim(),
    `spool: Spool at http://127.0.0.1:${port} did not answer within 300 ms (SPOOL_ADMIN_TIMEOUT_MS): is the gateway, or what is in front of it, stuck?`,
  );
});

test('spool admin against a server that is not Spool says so, without its page', async (t) => {
  const server = createHttpServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<html><body>nginx says no</body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;
  const res = await runSpool(['admin', 'org', 'list', '--url', `http://127.0.0.1:${port}`], {
    SPOOL_ADMIN_TOKEN: 'token',
  });
  t.is(res.code, 1);
  t.false(res.stderr.includes('nginx'), res.stderr);
  t.regex(
    res.stderr,
    /answered 404 with no JSON, as Spool's gateway never does: is --url the address of a Spool\?/,
  );
});

test('spool admin refuses what it can tell is wrong before asking the gateway, naming its flag or file', async (t) => {
  // Nothing listens here: each of these must fail before any request.
  const env = { SPOOL_URL: `http://127.0.0.1:${await freePort()}`, SPOOL_ADMIN_TOKEN: 'token' };
  const days = await runSpool(
    ['admin', 'settings', 'set', '--upload-retention-days', 'a week'],
    env,
  );
  t.is(days.code, 2);
  t.regex(days.stderr, /'--upload-retention-days <days>' argument 'a week' is invalid/);
  const dir = await mkdtemp(join(tmpdir(), 'spool-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'pricing.json');
  await writeFile(file, '{"pro": 1200,}');
  const pricing = await runSpool(['admin', 'settings', 'set', '--pricing-file', file], env);
  t.is(pricing.code, 1);
  t.regex(pricing.stderr, new RegExp(`^spool: ${file} is not JSON: `));
  const nothing = await runSpool(['admin', 'webhook', 'update', '--org', 'o', '--id', 'e'], env);
  t.is(nothing.code, 2);
  t.regex(nothing.stderr, /nothing to change: give at least one of --url, --event, --description/);
});

async function holdPort(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

test('spool dev with STATION_PORT taken says so before it starts anything, and exits 1', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'spool-dev-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const stationPort = await freePort();
  const holder = await holdPort(stationPort);
  t.teardown(() => holder.close());
  const res = await runSpool(['dev'], {
    PORT: String(await freePort()),
    STATION_PORT: String(stationPort),
    SPOOL_DATA_DIR: dataDir,
  });
  t.is(res.code, 1);
  t.is(
    res.stderr.trim(),
    `spool: port ${stationPort} is in use (STATION_PORT): stop what listens there, or set STATION_PORT to a free port`,
  );
  await t.throwsAsync(readFile(join(dataDir, 'admin-token'), 'utf8'), { code: 'ENOENT' });
});

test('spool serve gateway with PORT taken says so before connecting to anything', async (t) => {
  const port = await freePort();
  const holder = await holdPort(port);
  t.teardown(() => holder.close());
  const res = await runSpool(['serve', 'gateway'], {
    HOST: '127.0.0.1',
    PORT: String(port),
    NATS_URL: 'nats://127.0.0.1:4222',
    ACCOUNTS_ADDR: '127.0.0.1:50051',
    JOBS_ADDR: '127.0.0.1:50052',
    STATIONS_ADDR: '127.0.0.1:50053',
    WEBHOOKS_ADDR: '127.0.0.1:50054',
    SPOOL_ADMIN_TOKEN: 'a-long-enough-operator-token',
  });
  t.is(res.code, 1);
  t.regex(res.stderr, new RegExp(`^spool: port ${port} is in use \\(PORT\\)`));
});
