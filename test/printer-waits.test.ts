/**
 * Why queued and sent jobs wait, kept current in batches: the jobs service reads the printers that
 * `printer.status` and `station.*` events concern with one `PrintersOf` call per batch, which the
 * stations service answers only within the organization each printer or station is named with,
 * and writes their jobs' details together; jobs queued again get theirs after their transaction.
 */
import test, { type ExecutionContext } from 'ava';
import { type PrinterReport, StationsServiceClient } from '../gen/spool/v1/stations.js';
import { SCOPES } from '../lib/credentials.js';
import { createClient } from '../lib/grpc.js';
import { MAX_PRINTERS_OF } from '../services/stations/server.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
} from './helpers/system.js';

test('PrintersOf answers each printer and station within the organization it is named with', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const stations = createClient(StationsServiceClient, {
    service: 'stations',
    address: sys.system.servicesAddress,
  });
  t.teardown(() => stations.close());
  const setups = await Promise.all(
    ['Acme', 'Globex'].map(async (name) => {
      const orgId = await createOrg(sys.url, name);
      const station = await createStation(sys.url, orgId);
      const link = await connectLink(sys.linkAddress, station.token, [
        printer('desk'),
        printer('back', 'offline', 'lid open'),
      ]);
      t.teardown(() => link.close());
      const ids = link.welcome.printerIds as Record<'desk' | 'back', string>;
      return { orgId, stationId: station.id, ...ids };
    }),
  );
  const [a, b] = setups as [(typeof setups)[0], (typeof setups)[0]];

  const { items } = await stations.printersOf({
    printers: [
      { orgId: b.orgId, printerId: b.desk },
      // Another organization's printer, a malformed pair and one named twice find nothing more.
      { orgId: a.orgId, printerId: b.back },
      { orgId: 'not-an-id', printerId: a.desk },
      { orgId: a.orgId, printerId: a.desk },
    ],
    stations: [
      { orgId: a.orgId, stationId: a.stationId },
      { orgId: a.orgId, stationId: b.stationId },
    ],
  });
  const seen = items
    .map((p) => `${p.orgId} ${p.stationId} ${p.name} ${p.status} ${p.detail}`)
    .sort();
  t.deepEqual(
    seen,
    [
      `${a.orgId} ${a.stationId} back offline lid open`,
      `${a.orgId} ${a.stationId} desk ready `,
      `${b.orgId} ${b.stationId} desk ready `,
    ].sort(),
  );
  t.true(items.every((p) => p.stationOnline));

  const tooMany = Array.from({ length: MAX_PRINTERS_OF + 1 }, () => ({
    orgId: a.orgId,
    printerId: a.desk,
  }));
  const err = await t.throwsAsync(stations.printersOf({ printers: tooMany, stations: [] }));
  t.is((err as { code?: string }).code, 'invalid');
  t.deepEqual(await stations.printersOf({ printers: [], stations: [] }), { items: [] });
});

test('stations of several organizations going offline and back together: every waiting job says why, then goes out', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const perOrg = 4;
  const fleets = await Promise.all(
    ['Acme', 'Globex'].map(async (name) => {
      const orgId = await createOrg(sys.url, name);
      const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
      const members = await Promise.all(
        Array.from({ length: perOrg }, async () => {
          const station = await createStation(sys.url, orgId);
          // The printer cannot print yet, so the jobs made for it stay queued.
          const link = await connectLink(sys.linkAddress, station.token, [
            printer('desk', 'offline', 'out of paper'),
          ]);
          return { station, link, printerId: link.welcome.printerIds.desk as string };
        }),
      );
      return { orgId, secret, members };
    }),
  );
  const jobOf = async (orgId: string, secret: string, jobId: string) =>
    (
      await call<{ job: { status: string; status_detail: string } }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/jobs/${jobId}`,
        { token: secret },
      )
    ).body.job;
  const jobs = await Promise.all(
    fleets.flatMap(({ orgId, secret, members }) =>
      members.map(async ({ printerId }) => {
        const res = await call<{ job: { id: string; status_detail: string } }>(
          sys.url,
          'POST',
          `/v1/orgs/${orgId}/jobs`,
          { token: secret, body: { printer_id: printerId, content: { type: 'text', data: 'hi' } } },
        );
        t.is(res.status, 201);
        t.is(res.body.job.status_detail, 'waiting: printer "desk" is offline (out of paper)');
        return { orgId, secret, id: res.body.job.id };
      }),
    ),
  );
  const details = (want: string) =>
    Promise.all(
      jobs.map((j) =>
        eventually(
          () => jobOf(j.orgId, j.secret, j.id),
          (job) => job.status_detail === want,
        ),
      ),
    );

  // Every link drops at once: the stations' `station.offline` events reach the jobs service
  // together, and every job says its station is offline.
  for (const { members } of fleets) for (const { link } of members) link.close();
  await details('waiting: the station of printer "desk" is offline');

  // They come back together with their printers ready: the details clear and the jobs go out.
  const links: LinkClient[] = await Promise.all(
    fleets.flatMap(({ members }) =>
      members.map(({ station }) => connectLink(sys.linkAddress, station.token, [printer('desk')])),
    ),
  );
  t.teardown(() => {
    for (const link of links) link.close();
  });
  await details('');
  for (const [i, link] of links.entries()) {
    await link.until(() => link.jobs.some((j) => j.offer.jobId === jobs[i]?.id));
  }
  t.true(links.every((link) => link.jobs.length === 1));
});

/** What the API answers for a job. */
interface JobAnswer {
  job: { id: string; status: string; status_detail: string };
}

/**
 * A Spool of its own with an organization, an API key of it and a station linked with
 * `printers`; `api` calls `/v1/orgs/{org}…` with the key, `post` creates a text job.
 */
async function oneStation(t: ExecutionContext, printers: PrinterReport[]) {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, printers);
  t.teardown(() => link.close());
  const api = <T = JobAnswer>(method: string, path: string, body?: unknown) =>
    call<T>(sys.url, method, `/v1/orgs/${orgId}${path}`, {
      token: secret,
      ...(body === undefined ? {} : { body }),
    });
  const post = async (printerId: string, extra: Record<string, unknown> = {}) => {
    const res = await api('POST', '/jobs', {
      printer_id: printerId,
      content: { type: 'text', data: 'hi' },
      ...extra,
    });
    t.is(res.status, 201);
    return res.body.job;
  };
  const job = (id: string) => api('GET', `/jobs/${id}`).then((res) => res.body.job);
  /** The agent reports the printer as `ready`: the job's detail clears, then its print ends it. */
  const backOnThenPrinted = async (jobId: string, ready: PrinterReport) => {
    link.send({ printers: { printers: [ready] } });
    await eventually(
      () => job(jobId),
      (j) => j.status_detail === '',
    );
    link.send({ result: { jobId, attempt: 1, printed: true, detail: '' } });
    const printed = await eventually(
      () => job(jobId),
      (j) => j.status === 'printed',
    );
    t.is(printed.status_detail, '');
  };
  return { sys, link, api, post, job, backOnThenPrinted };
}

test('a job for a printer reported offline or in error is not offered until the agent reports it able to print', async (t) => {
  const { link, post } = await oneStation(t, [
    printer('desk'),
    printer('labels', 'offline', 'raw 10.0.0.9:9100: ECONNREFUSED'),
    printer('side', 'error', 'the folder cannot be written'),
  ]);
  const ids = link.welcome.printerIds as Record<'desk' | 'labels' | 'side', string>;
  const offered = () => link.jobs.map((j) => j.offer.jobId);

  // The held printers' jobs go out first; the desk's offer comes after theirs would have.
  const labels = await post(ids.labels);
  const side = await post(ids.side);
  t.is(
    labels.status_detail,
    'waiting: printer "labels" is offline (raw 10.0.0.9:9100: ECONNREFUSED)',
  );
  t.is(side.status_detail, 'waiting: printer "side" is in error (the folder cannot be written)');
  const desk = await post(ids.desk);
  await link.until(() => offered().includes(desk.id));
  t.deepEqual(offered(), [desk.id]);

  // The labels printer is back: its job goes out, the one in error still waits.
  link.send({
    printers: {
      printers: [printer('desk'), printer('labels'), printer('side', 'error', 'still')],
    },
  });
  await link.until(() => offered().includes(labels.id));
  t.deepEqual(offered(), [desk.id, labels.id]);

  link.send({ printers: { printers: [printer('desk'), printer('labels'), printer('side')] } });
  await link.until(() => offered().includes(side.id));
  t.deepEqual(offered(), [desk.id, labels.id, side.id]);
});

test('a job already at the agent says why it waits while its printer cannot print, and prints after', async (t) => {
  const { link, post, job, backOnThenPrinted } = await oneStation(t, [printer('labels')]);
  const jobId = (await post(link.welcome.printerIds.labels as string)).id;
  await link.until(() => link.jobs.some((j) => j.offer.jobId === jobId));
  link.send({ received: { jobId, attempt: 1 } });
  await eventually(
    () => job(jobId),
    (j) => j.status === 'sent',
  );

  // The printer is switched off while the agent holds the job.
  const off = 'raw 10.0.0.9:9100: ECONNREFUSED';
  link.send({ printers: { printers: [printer('labels', 'offline', off)] } });
  const waiting = await eventually(
    () => job(jobId),
    (j) => j.status_detail !== '',
  );
  t.is(waiting.status, 'sent');
  t.is(waiting.status_detail, `waiting: printer "labels" is offline (${off})`);

  // Back on: the detail clears, and the print is reported as usual.
  await backOnThenPrinted(jobId, printer('labels'));
});

test('a job for a printer out of paper goes to its station and says what it waits on until the paper is in', async (t) => {
  const { link, post, job, backOnThenPrinted } = await oneStation(t, [
    printer('desk', 'out_of_paper', 'media-empty-error'),
  ]);
  const created = await post(link.welcome.printerIds.desk as string);
  const waiting = 'waiting: printer "desk" is out of paper (media-empty-error)';
  t.is(created.status_detail, waiting);
  const jobId = created.id;

  // Unlike an offline printer's, the job goes out: it waits in the printer's own queue, and
  // reaching the station does not make it say any less.
  await link.until(() => link.jobs.some((j) => j.offer.jobId === jobId));
  link.send({ received: { jobId, attempt: 1 } });
  const sent = await eventually(
    () => job(jobId),
    (j) => j.status === 'sent',
  );
  t.is(sent.status_detail, waiting);

  // A jam, then paper and a clear path: the detail follows, then clears; the print ends it.
  link.send({ printers: { printers: [printer('desk', 'paper_jam', 'media-jam-error')] } });
  await eventually(
    () => job(jobId),
    (j) => j.status_detail === 'waiting: printer "desk" has a paper jam (media-jam-error)',
  );
  await backOnThenPrinted(jobId, printer('desk', 'printing'));
});

test('a job released, retried or due while its printer is offline says why it waits, as a new one does', async (t) => {
  const { sys, link, api, post, job } = await oneStation(t, [printer('desk')]);
  const printerId = link.welcome.printerIds.desk as string;
  const held = await post(printerId, { hold: true });
  const scheduled = await post(printerId, {
    schedule_at: new Date(sys.clock.now().getTime() + 60_000).toISOString(),
  });
  const failing = await post(printerId);
  await link.until(() => link.jobs.some((j) => j.offer.jobId === failing.id));
  link.send({ result: { jobId: failing.id, attempt: 1, printed: false, detail: 'jammed' } });
  await eventually(
    () => job(failing.id),
    (j) => j.status === 'failed',
  );

  // The printer goes off; then each job becomes queued again, in its own way.
  const off = 'waiting: printer "desk" is offline (unplugged)';
  link.send({ printers: { printers: [printer('desk', 'offline', 'unplugged')] } });
  const printers = () => api<{ printers: Array<{ status: string }> }>('GET', '/printers');
  await eventually(printers, (r) => r.body.printers[0]?.status === 'offline');
  t.is((await api('POST', `/jobs/${held.id}/retry`)).status, 200);
  t.is((await api('POST', `/jobs/${failing.id}/retry`)).status, 200);
  sys.clock.advance(61_000);
  await sys.system.sweeper.runOnce();
  for (const { id } of [held, failing, scheduled]) {
    const requeued = await eventually(
      () => job(id),
      (j) => j.status_detail !== '',
    );
    t.deepEqual([requeued.status, requeued.status_detail], ['queued', off], `job ${id}`);
  }
});
