import { randomUUID } from 'node:crypto';
import test from 'ava';
import pg from 'pg';
import { SCOPES } from '../lib/credentials.js';
import { createLogger } from '../lib/logger.js';
import { isTransient, retryTransient } from '../lib/transient.js';
import { connectLink, printer } from './helpers/link-client.js';
import { healthStatus } from './helpers/replicas.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
} from './helpers/system.js';

interface Status {
  status: string;
  components: Array<{ name: string; status: string }>;
}

test('connections the database drops mid-request answer 503 with Retry-After, and the services live on', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.front as string;

  // Another session ends every connection of the services' database again and again, as a
  // database restart or a failover does, while jobs are created.
  const killer = new pg.Client({ connectionString: sys.db.url });
  await killer.connect();
  t.teardown(() => killer.end());
  let killing = true;
  let killed = 0;
  const kills = (async () => {
    while (killing) {
      const { rows } = await killer.query<{ n: string }>(
        `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      killed += Number(rows[0]?.n ?? 0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const statuses = new Map<number, number>();
  const missingRetryAfter: number[] = [];
  const created: string[] = [];
  for (let round = 0; round < 15; round++) {
    const answers = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const reference = randomUUID();
        return call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
          token: key,
          body: { printer_id: printerId, reference, content: { type: 'text', data: 'x' } },
        });
      }),
    );
    for (const a of answers) {
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      if (a.status === 503 && a.headers.get('retry-after') === null) missingRetryAfter.push(503);
      if (a.status === 201) created.push(a.body.job.id);
    }
  }
  killing = false;
  await kills;
  t.true(killed > 0, 'connections were ended');
  t.log(Object.fromEntries(statuses), `${killed} connections ended`);
  t.deepEqual(
    [...statuses.keys()].filter((s) => s !== 201 && s !== 503),
    [],
    'every answer is a job or a 503',
  );
  t.deepEqual(missingRetryAfter, []);

  // Once the database stops dropping connections, jobs are created again.
  const after = await eventually(
    () =>
      call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: key,
        body: { printer_id: printerId, content: { type: 'text', data: 'after' } },
      }),
    (a) => a.status === 201,
  );
  created.push(after.body.job.id);

  // The services are still there and every job they answered 201 for exists.
  const list = await call<{ items: Array<{ id: string }> }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/jobs?limit=200`,
    { token: key },
  );
  t.is(list.status, 200);
  const listed = new Set(list.body.items.map((j) => j.id));
  t.deepEqual(
    created.filter((id) => !listed.has(id)),
    [],
  );
});

test('while NATS is away the gateway is not ready, the services not serving and the status says so; all come back with it', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const ready = async () => (await fetch(`${sys.url}/readyz`)).status;
  const serving = () => healthStatus(sys.system.servicesAddress).catch(() => 'unreachable');
  const delivery = async () =>
    (await call<Status>(sys.url, 'GET', '/v1/public/status')).body.components.find(
      (c) => c.name === 'print_delivery',
    )?.status;
  t.is(await ready(), 200);
  t.is(await serving(), 'SERVING');

  // The connections stay open, reconnecting, while the server is away: that is not being up.
  sys.nats.kill();
  await eventually(ready, (status) => status === 503, 15_000);
  await eventually(serving, (status) => status === 'NOT_SERVING', 15_000);
  t.is(await delivery(), 'outage');

  await sys.nats.restart();
  await eventually(ready, (status) => status === 200, 15_000);
  await eventually(serving, (status) => status === 'SERVING', 15_000);
  t.is(await delivery(), 'operational');
});

test('a station link whose reports NATS cannot store stays open while no stations replica can store them, and ends once another can', async (t) => {
  const lines: Array<{ msg: string }> = [];
  const logger = createLogger(
    { level: 'info', name: 'outage' },
    { write: (l) => lines.push(JSON.parse(l)) },
  );
  const sys = await startTestSystem({ reportRetryMs: 200, logger });
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.teardown(() => link.close());
  let ended = false;
  void link.ended.then(() => {
    ended = true;
  });
  const logged = (msg: RegExp) => lines.filter((l) => msg.test(l.msg)).length;
  const waiting = /^NATS does not store the station's reports, for no stations replica/;

  // NATS goes away for every replica (this one is the only one): the report waits, the link stays.
  sys.nats.kill();
  const first = randomUUID();
  link.send({ result: { jobId: first, attempt: 1, printed: true, detail: '' } });
  await eventually(
    async () => logged(waiting),
    (n) => n === 1,
    30_000,
  );
  t.false(ended, 'the link stayed open');
  await sys.nats.restart();
  await link.until(
    () => link.accepted.some((a) => a.jobId === first && a.kind === 'result'),
    30_000,
  );
  t.false(ended, 'the link stayed open');
  const online = await call<{ station: { online: boolean } }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}/stations/${station.id}`,
    { token: OPERATOR_TOKEN },
  );
  t.true(online.body.station.online, 'the station never read offline');

  // Another replica, alive, can store reports: a report NATS refuses ends the link, for the agent
  // to link there. (The last answer to whether one can is reused for 5 s.)
  sys.clock.advance(5_000);
  const db = new pg.Client({ connectionString: sys.db.url });
  await db.connect();
  t.teardown(() => db.end());
  await db.query(
    'INSERT INTO station_replicas (id, seen_at, takes_reports) VALUES ($1, $2, true)',
    [randomUUID(), sys.clock.now()],
  );
  sys.nats.kill();
  link.send({ result: { jobId: randomUUID(), attempt: 1, printed: true, detail: '' } });
  const err = await link.ended;
  t.is(err?.code, 14, 'UNAVAILABLE: the agent links again');
  t.is(logged(waiting), 1);
  await sys.nats.restart();
});

test('errors of a database or NATS that is away are transient; a bug is not', (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
    code: 'ECONNREFUSED',
  });
  t.true(isTransient(refused));
  t.true(isTransient(new AggregateError([refused], '')));
  t.true(
    isTransient(Object.assign(new Error('the database system is starting up'), { code: '57P03' })),
  );
  t.true(isTransient(new Error('Connection terminated unexpectedly')));
  t.true(isTransient(Object.assign(new Error('timeout'), { name: 'TimeoutError' })));
  t.true(
    isTransient(
      new Error('put failed', { cause: Object.assign(new Error('x'), { name: 'RequestError' }) }),
    ),
  );
  t.false(isTransient(new TypeError("Cannot read properties of undefined (reading 'id')")));
  t.false(isTransient(Object.assign(new Error('syntax error'), { code: '42601' })));
});

test('a transient failure is tried again after a wait that doubles up to its cap', async (t) => {
  const waits: number[] = [];
  let tries = 0;
  const answer = await retryTransient(
    async () => {
      tries++;
      if (tries < 8) throw Object.assign(new Error('no stream'), { name: 'NoResponders' });
      return 'stored';
    },
    { maxWaitMs: 1_000, sleep: async (ms) => void waits.push(ms) },
  );
  t.is(answer, 'stored');
  t.is(waits.length, 7);
  // 250 ms, then twice as long each time, each with up to half taken off as jitter.
  waits.forEach((ms, i) => {
    const full = Math.min(1_000, 250 * 2 ** i);
    t.true(ms >= full / 2 && ms <= full, `wait ${i + 1} was ${ms} ms`);
  });
  await t.throwsAsync(
    retryTransient(
      async () => {
        throw new TypeError('a bug');
      },
      { sleep: async () => t.fail('a bug is not tried again') },
    ),
    { instanceOf: TypeError },
  );
});
