/**
 * Diagnosis of a station's agent (docs/agent.md, "Diagnosis"): an agent linked to a real Spool
 * answers `POST /admin/v1/orgs/{org}/stations/{id}/diagnose` with its log lines, printers and
 * versions, and never a secret; the request is scoped to the organization, audited, and answered
 * 503 for a station that is not linked or whose agent does not answer.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import { lpstatWords } from '../agent/backends/cups.js';
import { createFileBackend } from '../agent/backends/file.js';
import { RecentLog } from '../agent/diagnose.js';
import { type Agent, parsePrinterSpec, runAgent } from '../agent/index.js';
import { printerStateWords } from '../agent/ipp/attributes.js';
import { PRINTER_STATE, type Value } from '../agent/ipp/protocol.js';
import { renderDiagnosis } from '../cli/admin-diagnosis.js';
import type { DiagnoseReport } from '../gen/spool/v1/stations.js';
import { capped, trustedDiagnosis } from '../lib/contracts/diagnosis.js';
import type { DiagnosisView as Diagnosis } from '../lib/contracts/diagnosis-view.js';
import { createLogger } from '../lib/logger.js';
import { member } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Context {
  sys: TestSystem;
}

const test = anyTest as TestFn<Context>;
/** Short, so that the agent that never answers costs the test little. */
const WAIT_MS = 1_500;

test.before(async (t) => {
  t.context.sys = await startTestSystem({ diagnoseWaitMs: WAIT_MS });
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

const diagnose = (sys: TestSystem, org: string, id: string, body?: unknown) =>
  call<{ diagnosis: Diagnosis; error?: { code: string; message: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${org}/stations/${id}/diagnose`,
    { token: OPERATOR_TOKEN, ...(body === undefined ? {} : { body }) },
  );

/** An agent of a new station, linked, logging into a {@link RecentLog}. */
async function linkedAgent(t: { teardown(fn: () => Promise<void>): void }, sys: TestSystem) {
  const orgId = await createOrg(sys.url);
  const station = await createStation(sys.url, orgId);
  const dir = await mkdtemp(join(tmpdir(), 'spool-diagnose-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const recentLog = new RecentLog();
  const logger = createLogger({ name: 'agent', level: 'info' }, recentLog.tee());
  const agent: Agent = await runAgent({
    server: sys.linkAddress,
    token: station.token,
    printers: [
      parsePrinterSpec(`desk=file:${join(dir, 'desk')}`),
      // A URI with a password, as a mistaken configuration could carry one.
      {
        name: 'remote',
        backend: { kind: 'ipp', uri: 'ipp://ops:hunter2@127.0.0.1:1/ipp/print?k=v' },
      },
    ],
    stateDir: join(dir, 'state'),
    logger,
    recentLog,
    agentVersion: '9.8.7',
    backoff: { initialMs: 10, maxMs: 50 },
    createBackend: (spec) => {
      if (spec.kind === 'file') return createFileBackend(spec.dir);
      // Printed to a folder, but with a printer's own words for its state, a password among them.
      const folder = createFileBackend(join(dir, 'remote'));
      return {
        ...folder,
        status: async () => ({
          ...(await folder.status()),
          raw: 'printer-state=idle printer-state-message="see https://ops:hunter2@printer.local/"',
        }),
      };
    },
  });
  t.teardown(() => agent.stop());
  await eventually(
    () =>
      call<{ station: { online: boolean } }>(
        sys.url,
        'GET',
        `/admin/v1/orgs/${orgId}/stations/${station.id}`,
        { token: OPERATOR_TOKEN },
      ),
    (r) => r.body.station.online,
  );
  // Lines that would carry the token, were it not for redaction and the scrub after it.
  logger.info({ token: station.token }, 'a field named token');
  logger.warn(`a message quoting ${station.token} and https://ops:hunter2@example.com/x`);
  return { orgId, station, dir };
}

test('a linked agent answers with its log lines, printers and versions, and no secret', async (t) => {
  const { sys } = t.context;
  const { orgId, station, dir } = await linkedAgent(t, sys);

  const res = await diagnose(sys, orgId, station.id);
  t.is(res.status, 200, JSON.stringify(res.body));
  const d = res.body.diagnosis;
  t.is(d.versions.agent, '9.8.7');
  t.is(d.versions.node, process.versions.node);
  t.is(d.versions.platform, `${process.platform}_${process.arch}`);
  t.regex(d.versions.os ?? '', new RegExp(`^${process.platform} `));
  t.deepEqual(
    d.printers.map((p) => [p.name, p.backend, p.status, p.held_jobs]),
    [
      ['desk', `file:${join(dir, 'desk')}`, 'ready', 0],
      ['remote', 'ipp://127.0.0.1:1/ipp/print', 'ready', 0],
    ],
  );
  t.deepEqual(
    d.printers.map((p) => p.raw),
    ['', 'printer-state=idle printer-state-message="see https://printer.local/"'],
  );
  t.true(d.log_lines.some((l) => l.includes('"msg":"station agent started"')));
  t.true(d.log_lines.some((l) => l.includes('"msg":"a field named token"')));
  t.true(
    d.log_lines.some((l) => l.includes('a message quoting [redacted] and https://example.com/x')),
  );
  // The newest line says that the agent was asked.
  t.regex(d.log_lines.at(-1) ?? '', /"msg":"diagnosis asked over the link/);
  t.false(d.truncated);
  const text = JSON.stringify(res.body);
  t.false(text.includes(station.token), 'the device token never appears');
  t.false(text.includes('hunter2'), 'no password of a URI appears');

  // Fewer lines when asked: the newest.
  const few = await diagnose(sys, orgId, station.id, { log_lines: 2 });
  t.is(few.status, 200);
  t.is(few.body.diagnosis.log_lines.length, 2);
  t.deepEqual(
    few.body.diagnosis.log_lines.map((l) => (JSON.parse(l) as { msg: string }).msg.slice(0, 26)),
    ['diagnosis asked over the l', 'diagnosis asked over the l'],
  );
  for (const bad of [0, 201, 'ten']) {
    const refused = await diagnose(sys, orgId, station.id, { log_lines: bad });
    t.is(refused.status, 400, `log_lines ${bad}`);
  }

  // Another organization's id is not found, and the request is in the audit log.
  const other = await createOrg(sys.url, 'Other');
  const elsewhere = await diagnose(sys, other, station.id);
  t.is(elsewhere.status, 404);
  t.is(elsewhere.body.error?.code, 'not_found');
  const audit = await call<{
    items: Array<{ route: string; method: string; status: number; target: Record<string, string> }>;
  }>(sys.url, 'GET', `/admin/v1/audit?org=${orgId}`, { token: OPERATOR_TOKEN });
  const entries = audit.body.items.filter(
    (e) => e.route === '/admin/v1/orgs/:org/stations/:id/diagnose',
  );
  t.deepEqual(
    entries.map((e) => [e.method, e.status, e.target.id]).sort(),
    [200, 200, 400, 400, 400].map((status) => ['POST', status, station.id]),
  );

  // The console's Diagnose: for the organization's admins, audited as theirs.
  const admin = await member(sys.url, orgId, 'admin');
  const fromConsole = await admin.call<{ diagnosis: Diagnosis }>(
    'POST',
    `/console/v1/orgs/${orgId}/stations/${station.id}/diagnose`,
    { body: { log_lines: 3 } },
  );
  t.is(fromConsole.status, 200, JSON.stringify(fromConsole.body));
  t.is(fromConsole.body.diagnosis.log_lines.length, 3);
  t.is(fromConsole.body.diagnosis.versions.agent, '9.8.7');
  t.false(JSON.stringify(fromConsole.body).includes(station.token));
  const viewer = await member(sys.url, orgId, 'viewer');
  const refused = await viewer.call(
    'POST',
    `/console/v1/orgs/${orgId}/stations/${station.id}/diagnose`,
  );
  t.is(refused.status, 403);
  const byPerson = await call<{ items: Array<{ route: string; actor: string; status: number }> }>(
    sys.url,
    'GET',
    `/admin/v1/audit?org=${orgId}&actor=person:${admin.personId}`,
    { token: OPERATOR_TOKEN },
  );
  t.true(
    byPerson.body.items.some(
      (e) => e.route === '/console/v1/orgs/:org/stations/:id/diagnose' && e.status === 200,
    ),
    JSON.stringify(byPerson.body.items),
  );

  // What the CLI prints of it: readable, or the API's JSON.
  const cli = await runSpool(
    ['admin', 'station', 'diagnose', '--org', orgId, '--id', station.id, '--lines', '3'],
    { SPOOL_URL: sys.url, SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN },
  );
  t.is(cli.code, 0, cli.stderr);
  t.regex(cli.stdout, /^versions:\n {2}agent: 9\.8\.7$/m);
  t.regex(cli.stdout, /^ {2}NAME +BACKEND +STATUS +HELD +DETAIL$/m);
  t.regex(cli.stdout, /^log \(last 3 lines\):$/m);
  t.false(cli.stdout.includes(station.token));
  const cliJson = await runSpool(
    ['admin', 'station', 'diagnose', '--org', orgId, '--id', station.id, '--json'],
    { SPOOL_URL: sys.url, SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN },
  );
  t.is(cliJson.code, 0, cliJson.stderr);
  t.is((JSON.parse(cliJson.stdout) as { diagnosis: Diagnosis }).diagnosis.versions.agent, '9.8.7');
  const printed = renderDiagnosis(d);
  t.regex(printed, /^ {2}agent: 9\.8\.7$/m);
  t.regex(printed, /^ {2}remote +ipp:\/\/127\.0\.0\.1:1\/ipp\/print +ready +0/m);
  t.regex(printed, / INFO {2}station agent started/);
});

test('a station not linked answers 503 at once; an agent that does not answer, 503 after the wait', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const station = await createStation(sys.url, orgId);

  const unlinked = await diagnose(sys, orgId, station.id);
  t.is(unlinked.status, 503);
  t.is(unlinked.body.error?.code, 'unavailable');
  t.regex(unlinked.body.error?.message ?? '', new RegExp(`station ${station.id} is not linked`));

  // A link that takes the request and sends back only a report for another request: dropped.
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.teardown(() => link.close());
  link.send({ diagnosis: { requestId: 'nobody-asked', logLines: ['x'] } });
  const started = Date.now();
  const silent = await diagnose(sys, orgId, station.id);
  t.is(silent.status, 503);
  t.regex(silent.body.error?.message ?? '', /did not answer within 1\.5 s/);
  t.true(Date.now() - started >= WAIT_MS);
});

test('a backend says what its printer said of its state in its own words', (t) => {
  t.is(
    lpstatWords(
      'printer front is idle.  enabled since Sat 28 Nov 2026\n\tPaper low\n\tAlerts: media-low\n\tDescription: Front\n',
    ),
    'printer front is idle.  enabled since Sat 28 Nov 2026; Alerts: media-low',
  );
  const attributes = new Map<string, Value[]>([
    ['printer-state', [PRINTER_STATE.stopped]],
    ['printer-state-reasons', ['media-empty-error', 'door-open']],
    ['printer-state-message', ['Load paper']],
  ]);
  t.is(
    printerStateWords(attributes),
    'printer-state=stopped printer-state-reasons=media-empty-error,door-open printer-state-message="Load paper"',
  );
});

test('a report is believed within bounds: lines, secrets and size', (t) => {
  const big: DiagnoseReport = {
    requestId: 'r',
    logLines: Array.from({ length: 300 }, (_, i) => `${i} ${'x'.repeat(10_000)} svc_dev_abc123`),
    printers: [
      {
        name: 'p',
        backend: 'ipp://u:pw@host/ipp',
        status: 'ready',
        detail: '',
        raw: '',
        heldJobs: 1,
        capabilities: undefined,
      },
    ],
    versions: { agent: '1' },
    truncated: false,
  };
  const trusted = trustedDiagnosis(big);
  t.true(trusted.logLines.length <= 200);
  t.true(trusted.truncated);
  t.is(trusted.printers[0]?.backend, 'ipp://host/ipp');
  t.false(trusted.logLines.some((l) => l.includes('svc_dev_')));
  t.is(trusted.logLines.at(-1)?.slice(0, 4), '299 ');
  const small = capped(big, 50_000);
  t.true(small.logLines.length < 10);
  t.true(small.truncated);
});
