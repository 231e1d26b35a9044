/**
 * Print options between the API and `spool agent`: what a printer reports it can do is what the
 * job API accepts, and what the API accepts comes out of the printer.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { createFileBackend } from '../agent/backends/file.js';
import { type Agent, type AgentOptions, parsePrinterSpec, runAgent } from '../agent/index.js';
import { SCOPES } from '../lib/credentials.js';
import { silentLogger } from '../lib/logger.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgId: string;
  key: string;
}

const test = anyTest as TestFn<Ctx>;

interface Printer {
  id: string;
  name: string;
  status: string;
  station_online: boolean;
}

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  t.context = { sys, orgId, key };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

/** A station of its own with one `file:` printer `name`; answers the directory it writes to. */
async function station(
  t: ExecutionContext<Ctx>,
  name: string,
  overrides: Partial<AgentOptions> = {},
): Promise<{ out: string; agent: Agent }> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-capabilities-'));
  const { token } = await createStation(t.context.sys.url, t.context.orgId, { name });
  const agent = await runAgent({
    server: t.context.sys.linkAddress,
    token,
    printers: [parsePrinterSpec(`${name}=file:out`, dir)],
    stateDir: join(dir, 'state'),
    logger: silentLogger,
    agentVersion: 'test',
    backoff: { initialMs: 10, maxMs: 50 },
    stopGraceMs: 1_000,
    ...overrides,
  });
  t.teardown(async () => {
    await agent.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return { out: join(dir, 'out'), agent };
}

function api<T>(t: ExecutionContext<Ctx>, method: string, path: string, body?: unknown) {
  return call<T>(t.context.sys.url, method, `/v1/orgs/${t.context.orgId}${path}`, {
    token: t.context.key,
    ...(body === undefined ? {} : { body }),
  });
}

/** The printer named `name` once `check` holds of it. */
async function printerWhen(
  t: ExecutionContext<Ctx>,
  name: string,
  check: (p: Printer) => boolean,
): Promise<Printer> {
  const res = await eventually(
    () => api<{ printers: Printer[] }>(t, 'GET', '/printers'),
    (r) => r.body.printers.some((p) => p.name === name && check(p)),
  );
  return res.body.printers.find((p) => p.name === name) as Printer;
}

test('copies: 3 to a file printer through spool agent writes three copies and reads printed', async (t) => {
  const { out } = await station(t, 'desk');
  const printer = await printerWhen(t, 'desk', (p) => p.station_online && p.status === 'ready');
  const created = await api<{ job: { id: string } }>(t, 'POST', '/jobs', {
    printer_id: printer.id,
    content: { type: 'text', data: 'three of these' },
    options: { copies: 3 },
  });
  t.is(created.status, 201);
  const id = created.body.job.id;
  await eventually(
    () => api<{ job: { status: string } }>(t, 'GET', `/jobs/${id}`),
    (r) => r.body.job.status === 'printed',
  );
  t.deepEqual((await readdir(out)).sort(), [
    `${id}-1-copy2.txt`,
    `${id}-1-copy3.txt`,
    `${id}-1.txt`,
  ]);
});

test('a printer whose status cannot be read keeps the capabilities it reported: copies are still accepted', async (t) => {
  let answering = true;
  await station(t, 'slow', {
    statusIntervalMs: 20,
    statusTimeoutMs: 50,
    createBackend: (spec) => {
      if (spec.kind !== 'file') throw new Error(`this test uses a file printer, not ${spec.kind}`);
      const real = createFileBackend(spec.dir);
      return {
        print: (job, signal) => real.print(job, signal),
        // A printer that stops answering, as a hung `lpstat` does: the read never ends.
        status: () => (answering ? real.status() : new Promise(() => {})),
      };
    },
  });
  await printerWhen(t, 'slow', (p) => p.station_online && p.status === 'ready');
  answering = false;
  const printer = await printerWhen(t, 'slow', (p) => p.status === 'unknown');
  const res = await api<{ error?: { message: string } }>(t, 'POST', '/jobs', {
    printer_id: printer.id,
    content: { type: 'text', data: 'still three' },
    options: { copies: 3 },
  });
  t.is(res.status, 201, res.body.error?.message);
});
