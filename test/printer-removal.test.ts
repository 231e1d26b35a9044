/**
 * A printer its station's agent stops reporting: it reads `removed`, a `printer.status` event says
 * so, jobs waiting for it say why in their `status_detail` (they still expire), and it comes back,
 * with its waiting jobs offered, when the agent reports it again.
 */
import test from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { collectEvents } from './helpers/events.js';
import { connectLink, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
} from './helpers/system.js';

interface PrinterView {
  id: string;
  name: string;
  status: string;
  detail: string;
  station_online: boolean;
}

interface JobView {
  id: string;
  status: string;
  status_detail: string;
}

test('a printer the agent no longer reports is removed, its jobs say why they wait, and it comes back', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const events = await collectEvents(sys.nats.url);
  t.teardown(() => events.close());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);
  const api = <T>(method: string, path: string, body?: unknown) =>
    call<T>(sys.url, method, `/v1/orgs/${orgId}${path}`, {
      token: secret,
      ...(body === undefined ? {} : { body }),
    });
  const printers = async () =>
    (await api<{ printers: PrinterView[] }>('GET', '/printers')).body.printers;
  const desk = async () => (await printers()).find((p) => p.name === 'desk') as PrinterView;
  const postJob = async (body: Record<string, unknown> = {}) => {
    const res = await api<{ job: JobView }>('POST', '/jobs', {
      printer_id: deskId,
      content: { type: 'text', data: 'hello' },
      ...body,
    });
    t.is(res.status, 201);
    t.is(res.body.job.status, 'queued');
    return res.body.job.id;
  };
  const detailOf = (jobId: string, detail: string) =>
    eventually(
      async () => (await api<{ job: JobView }>('GET', `/jobs/${jobId}`)).body.job,
      (job) => job.status_detail === detail,
    );

  const first = await connectLink(sys.linkAddress, station.token, [
    printer('desk'),
    printer('back'),
  ]);
  const deskId = first.welcome.printerIds.desk as string;
  first.close();
  await eventually(desk, (p) => !p.station_online);

  // While the station is offline, a job for its printer waits and says so.
  const early = await postJob();
  await detailOf(early, 'waiting: the station of printer "desk" is offline');

  // The agent comes back without `desk`.
  const link = await connectLink(sys.linkAddress, station.token, [printer('back')]);
  t.teardown(() => link.close());
  const removed = await eventually(desk, (p) => p.status === 'removed');
  t.like(removed, {
    id: deskId,
    station_online: true,
    detail: 'the station no longer reports this printer',
  });
  await events.waitFor(
    (e) =>
      e.type === 'printer.status' &&
      e.data.printer_id === deskId &&
      e.data.status === 'removed' &&
      e.org_id === orgId,
  );
  const removedDetail = 'waiting: printer "desk" is no longer reported by its station';
  await detailOf(early, removedDetail);

  // A job created for the removed printer says so too, and still expires as any waiting job.
  const later = await postJob();
  await detailOf(later, removedDetail);
  const expiring = await postJob({ expire_after: 60 });
  await detailOf(expiring, removedDetail);
  sys.clock.advance(61_000);
  await sys.system.sweeper.runOnce();
  t.like((await api<{ job: JobView }>('GET', `/jobs/${expiring}`)).body.job, {
    status: 'failed',
    status_detail: 'expired',
  });
  t.is(link.jobs.length, 0);

  // The agent reports `desk` again: it is ready, and its waiting jobs go out and stop saying why.
  link.send({ printers: { printers: [printer('desk'), printer('back')] } });
  t.like(await eventually(desk, (p) => p.status === 'ready'), { id: deskId, detail: '' });
  await events.waitFor(
    (e) => e.type === 'printer.status' && e.data.printer_id === deskId && e.data.status === 'ready',
  );
  await link.until(() => [early, later].every((id) => link.jobs.some((j) => j.offer.jobId === id)));
  await detailOf(early, '');
  await detailOf(later, '');
});
