/**
 * The station owner's everyday commands against a real Spool and a real `spool agent` process:
 * the token kept off the command line, `status` while connected, after the link is lost and after
 * the agent was killed, `printers` and `test-print`.
 */
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { formatLogLine } from '../agent/log-format.js';
import type { AgentStatus } from '../agent/status.js';
import { formatStatus, STATUS_EXIT, type StatusReport, statusExit } from '../cli/agent-status.js';
import { SCOPES } from '../lib/credentials.js';
import { tempDir } from './helpers/printing-org.js';
import { runSpool, type SpoolProcess, spawnSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Context {
  sys: TestSystem;
  orgId: string;
  key: string;
}

const test = anyTest as TestFn<Context>;

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  t.context = { sys, orgId, key };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface Station {
  dir: string;
  config: string;
  printed: string;
  state: string;
  token: string;
  stationId: string;
  name: string;
}

/** A station folder with a configuration file whose token is in a token file. */
async function station(
  t: ExecutionContext<Context>,
  server: string,
  extra: string[] = [],
): Promise<Station> {
  const dir = await tempDir('spool-agent-commands-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const name = `Station ${Math.random().toString(36).slice(2, 8)}`;
  const created = await createStation(t.context.sys.url, t.context.orgId, { name });
  const printed = join(dir, 'printed');
  const state = join(dir, 'state');
  await mkdir(printed);
  await writeFile(join(dir, 'agent.token'), `${created.token}\n`, { mode: 0o600 });
  const config = join(dir, 'agent.toml');
  await writeFile(
    config,
    [
      `server = "${server}"`,
      'token_file = "agent.token"',
      'state_dir = "state"',
      '',
      '[printers]',
      'desk = "file:printed"',
      ...extra,
      '',
    ].join('\n'),
  );
  return { dir, config, printed, state, token: created.token, stationId: created.id, name };
}

async function online(t: { context: Context }, name: string, stationId: string) {
  const { sys, orgId, key } = t.context;
  const res = await eventually(
    () =>
      call<{
        printers: Array<{ id: string; name: string; station_id: string; station_online: boolean }>;
      }>(sys.url, 'GET', `/v1/orgs/${orgId}/printers?limit=200`, { token: key }),
    (r) =>
      r.body.printers.some(
        (p) => p.name === name && p.station_id === stationId && p.station_online,
      ),
    30_000,
  );
  return res.body.printers.find((p) => p.name === name && p.station_id === stationId)?.id as string;
}

function stopAgent(t: { teardown(fn: () => unknown): void }, agent: SpoolProcess): SpoolProcess {
  t.teardown(() => agent.stop());
  return agent;
}

test.serial(
  'the agent takes its token from a token file or the environment, never the command line',
  async (t) => {
    const s = await station(t, t.context.sys.linkAddress);
    const agent = stopAgent(t, spawnSpool(['agent', '--config', s.config], { LOG_LEVEL: 'info' }));
    await online(t, 'desk', s.stationId);
    const cmdline = await readFile(`/proc/${agent.child.pid}/cmdline`, 'utf8');
    t.false(cmdline.includes(s.token));
    t.false(agent.output().includes(s.token));
    t.false(agent.output().includes('--token puts'));
    t.false(agent.output().includes('can be read by other users'));
    t.is(await agent.stop(), 0);

    // A token file others can read is used, with a warning.
    await chmod(join(s.dir, 'agent.token'), 0o644);
    const loose = stopAgent(t, spawnSpool(['agent', '--config', s.config], {}));
    await loose.waitFor(/the token file can be read by other users; chmod 600 it/);
    await loose.waitFor(/"msg":"station agent started"/);
    t.is(await loose.stop(), 0);

    // The environment, with no token in the file at all.
    const other = await station(t, t.context.sys.linkAddress);
    await rm(join(other.dir, 'agent.token'));
    await writeFile(
      other.config,
      (await readFile(other.config, 'utf8')).replace('token_file = "agent.token"\n', ''),
    );
    const fromEnv = stopAgent(
      t,
      spawnSpool(['agent', '--config', other.config], { SPOOL_DEVICE_TOKEN: other.token }),
    );
    await online(t, 'desk', other.stationId);
    t.false((await readFile(`/proc/${fromEnv.child.pid}/cmdline`, 'utf8')).includes(other.token));
    t.is(await fromEnv.stop(), 0);

    // --token still works, and says why it should not be used.
    const flagged = stopAgent(
      t,
      spawnSpool(['agent', '--config', other.config, '--token', other.token], {}),
    );
    await flagged.waitFor(
      /--token puts the device token where every user of this machine can read it/,
    );
    await online(t, 'desk', other.stationId);
    t.is(await flagged.stop(), 0);

    // No token anywhere: the agent says where to put one.
    const none = await runSpool(['agent', '--config', other.config], {});
    t.is(none.code, 1);
    t.regex(
      none.stderr,
      /give the station token: token_file \(or token\) in the configuration file, or SPOOL_DEVICE_TOKEN/,
    );

    // A token the server refuses stops the agent, naming where the token came from.
    const stale = await runSpool(['agent', '--config', other.config], {
      SPOOL_DEVICE_TOKEN: 'svc_dev_not-this-stations-token',
    });
    // Its own exit status, which the systemd unit does not restart on.
    t.is(stale.code, 78);
    t.regex(stale.stderr, /refused the station token from SPOOL_DEVICE_TOKEN \(UNAUTHENTICATED/);
    await writeFile(join(s.dir, 'agent.token'), 'svc_dev_replaced-long-ago\n', { mode: 0o600 });
    const fromFile = await runSpool(['agent', '--config', s.config], {});
    t.is(fromFile.code, 78);
    t.true(
      fromFile.stderr.includes(
        `refused the station token from token_file ${join(s.dir, 'agent.token')} (`,
      ),
      fromFile.stderr,
    );
    t.regex(fromFile.stderr, /put the station's current token there/);
  },
);

test.serial(
  'status tells the truth while connected, after the link is lost, and after the agent was killed',
  async (t) => {
    // A server the test can take away: a TCP relay in front of Spool's station link.
    const [host, port] = t.context.sys.linkAddress.split(':') as [string, string];
    const sockets = new Set<Socket>();
    const relay = createServer((client) => {
      const upstream = connect(Number(port), host);
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close);
      upstream.on('error', close);
      client.on('close', close);
      upstream.on('close', close);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    t.teardown(() => relay.close());
    const relayPort = (relay.address() as AddressInfo).port;

    const s = await station(t, `127.0.0.1:${relayPort}`, ['labels = "raw:127.0.0.1:1"']);
    const status = () => runSpool(['agent', 'status', '--config', s.config], {});

    const agent = stopAgent(t, spawnSpool(['agent', '--config', s.config], {}));
    const desk = await online(t, 'desk', s.stationId);
    const res = await call<{ job: { id: string } }>(
      t.context.sys.url,
      'POST',
      `/v1/orgs/${t.context.orgId}/jobs`,
      {
        token: t.context.key,
        body: { printer_id: desk, title: 'one', content: { type: 'text', data: 'one' } },
      },
    );
    t.is(res.status, 201);
    const connected = await eventually(status, (r) => r.stdout.includes('1 printed'), 15_000);
    t.is(connected.code, 0, connected.stdout);
    t.regex(connected.stdout, new RegExp(`^running: pid ${agent.child.pid}, `, 'm'));
    t.regex(
      connected.stdout,
      new RegExp(
        `^link: connected to 127\\.0\\.0\\.1:${relayPort} since .*, station "${s.name}" \\(${s.stationId}\\)$`,
        'm',
      ),
    );
    t.regex(connected.stdout, new RegExp(`^state directory: ${s.state}$`, 'm'));
    t.regex(connected.stdout, /^ {2}desk\s+ready/m);
    t.regex(connected.stdout, /^ {2}labels\s+offline/m);
    t.regex(connected.stdout, /^jobs today \(\d{4}-\d\d-\d\d\): 1 printed, 0 failed$/m);
    t.regex(connected.stdout, /^last error: none$/m);
    const json = await runSpool(['agent', 'status', '--json', '--config', s.config], {});
    const report = JSON.parse(json.stdout) as {
      running: boolean;
      status: { link: { connected: boolean }; jobs_today: { printed: number } };
    };
    t.true(report.running);
    t.true(report.status.link.connected);
    t.is(report.status.jobs_today.printed, 1);
    t.false(json.stdout.includes(s.token));

    // The link is lost: the relay stops answering and cuts what it carried.
    relay.close();
    for (const socket of sockets) socket.destroy();
    const lost = await eventually(
      status,
      (r) => r.stdout.includes('link: not connected') && !r.stdout.includes('last error: none'),
      15_000,
    );
    t.is(lost.code, 2, lost.stdout);
    t.regex(lost.stdout, /^running: /m);
    t.regex(
      lost.stdout,
      new RegExp(`^link: not connected \\(to 127\\.0\\.0\\.1:${relayPort}\\) since `, 'm'),
    );
    t.regex(
      lost.stdout,
      new RegExp(`^last error: .*station link to 127\\.0\\.0\\.1:${relayPort}: UNAVAILABLE`, 'm'),
    );
    // Jobs printed today are still counted.
    t.regex(lost.stdout, /1 printed/);

    // Killed without a chance to say so: status does not claim it runs.
    agent.child.kill('SIGKILL');
    await agent.exited;
    const killed = await status();
    t.is(killed.code, 3);
    t.regex(
      killed.stdout,
      new RegExp(
        `^not running: pid ${agent.child.pid} is gone; it ended without stopping cleanly, last seen `,
      ),
    );
    t.regex(killed.stdout, /^printers \(when it last ran\):$/m);
  },
);

test('printers lists what each backend finds, and says why CUPS found nothing', async (t) => {
  const s = await station(t, '127.0.0.1:1', ['labels = "raw:127.0.0.1:1"', 'office = "cups:*"']);
  const result = await runSpool(['agent', 'printers', '--config', s.config], {
    CUPS_SERVER: '127.0.0.1:1',
  });
  t.is(result.code, 0, result.stderr);
  t.regex(
    result.stdout,
    new RegExp(
      `^desk\\n {2}backend: {6}file:${s.printed}\\n {2}status: {7}ready\\n {2}capabilities: copies$`,
      'm',
    ),
  );
  t.regex(result.stdout, /^labels\n {2}backend: {6}raw:127\.0\.0\.1:1\n {2}status: {7}offline/m);
  t.regex(
    result.stdout,
    /^office\n {2}backend: {6}cups:\*\n {2}status: {7}unknown: no CUPS queues found: CUPS at 127\.0\.0\.1:1: scheduler is not running$/m,
  );
});

test('test-print prints a test page through the backend, and names the printers when it is given a wrong one', async (t) => {
  const s = await station(t, '127.0.0.1:1', ['labels = "raw:127.0.0.1:1"']);
  const done = await runSpool(['agent', 'test-print', 'desk', '--config', s.config], {});
  t.is(done.code, 0, done.stderr);
  t.regex(done.stdout, new RegExp(`^printed a test page on desk \\(file:${s.printed}\\)$`, 'm'));
  const [page] = await readdir(s.printed);
  t.regex(page ?? '', /^test-page-\d+-1\.txt$/);
  t.regex(
    await readFile(join(s.printed, page as string), 'utf8'),
    /^Spool test page\n\nprinter: desk\n/,
  );

  const wrong = await runSpool(['agent', 'test-print', 'nope', '--config', s.config], {});
  t.is(wrong.code, 1);
  t.regex(wrong.stderr, /no printer named "nope"; the printers are: desk, labels/);

  // A printer that cannot print now is said so at once, rather than the page waiting unseen.
  const refused = await runSpool(['agent', 'test-print', 'labels', '--config', s.config], {});
  t.is(refused.code, 1);
  t.regex(
    refused.stderr,
    /labels is offline \(.*ECONNREFUSED.*\): no test page was sent; try again once it is ready/,
  );
});

test('logs are readable lines on a terminal and JSON otherwise', (t) => {
  const line = JSON.stringify({
    level: 'info',
    time: '2026-11-23T13:04:07.123Z',
    pid: 1,
    hostname: 'h',
    name: 'agent',
    station_id: 'st_1',
    printers: ['desk', 'labels'],
    msg: 'station link up',
  });
  t.is(
    formatLogLine(line),
    '13:04:07 INFO  station link up  station_id=st_1 printers=["desk","labels"]\n',
  );
  t.is(formatLogLine('not json'), 'not json\n');
});

/** A running, connected agent's status report as of `at`, with `printers`. */
function connectedReport(at: string, printers: AgentStatus['printers']): StatusReport {
  return {
    state_dir: '/var/lib/spool-agent',
    running: true,
    stale: false,
    status: {
      pid: 1,
      agent_version: 'test',
      started_at: at,
      updated_at: at,
      server: 'spool.example:7070',
      link: { connected: true, since: at, server: 'spool.example:7070', station_id: 's1' },
      printers,
      jobs_today: { date: at.slice(0, 10), printed: 4, failed: 0 },
      last_error: null,
    },
  };
}

test('status shows how many jobs wait for each printer', (t) => {
  const out = formatStatus(
    connectedReport(new Date().toISOString(), [
      { name: 'desk', status: 'ready', detail: '', jobs_waiting: 0 },
      {
        name: 'labels',
        status: 'offline',
        detail: 'raw 10.0.0.9:9100: ECONNREFUSED',
        jobs_waiting: 3,
      },
      { name: 'back', status: 'out_of_paper', detail: 'media-empty-error', jobs_waiting: 1 },
    ]),
  );
  t.regex(out, /^ {2}desk {4}ready$/m);
  t.regex(
    out,
    /^ {2}labels {2}offline {7}raw 10\.0\.0\.9:9100: ECONNREFUSED {2}\(3 jobs waiting\)$/m,
  );
  t.regex(out, /^ {2}back {4}out_of_paper {2}media-empty-error {2}\(1 job waiting\)$/m);
});

test('status of an agent that stopped writing its status does not count as connected', (t) => {
  const report = {
    ...connectedReport(new Date(Date.now() - 120_000).toISOString(), []),
    stale: true,
  };
  const out = formatStatus(report);
  t.regex(out, /the agent may be stuck/);
  t.regex(out, /^link: last known connected to spool\.example:7070/m);
  t.is(statusExit(report), STATUS_EXIT.disconnected);
  t.is(statusExit({ ...report, stale: false }), STATUS_EXIT.connected);
  t.is(statusExit({ ...report, running: false }), STATUS_EXIT.notRunning);
});

test('status says where an update that did not go through stands, and nothing while it is current', (t) => {
  const at = new Date().toISOString();
  const base = connectedReport(at, []);
  const withUpdate = (update: { state: string; version: string; detail: string }) =>
    formatStatus({ ...base, status: { ...(base.status as AgentStatus), update } });
  t.notRegex(withUpdate({ state: 'current', version: '1.1.0', detail: '' }), /^update:/m);
  t.regex(
    withUpdate({
      state: 'rolled_back',
      version: '1.2.0',
      detail: 'version 1.2.0 exited (3) before it linked',
    }),
    /^update: 1\.2\.0 rolled back: version 1\.2\.0 exited \(3\) before it linked$/m,
  );
  t.regex(
    withUpdate({
      state: 'failed',
      version: '1.3.0',
      detail: 'the package’s SHA-256 does not match',
    }),
    /^update: 1\.3\.0 failed: the package’s SHA-256 does not match$/m,
  );
  t.regex(
    withUpdate({ state: 'downloading', version: '1.4.0', detail: '' }),
    /^update: downloading 1\.4\.0$/m,
  );
});
