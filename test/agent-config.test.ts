/**
 * The agent's configuration file: what a station owner writes in /etc/spool/agent.toml, and the
 * errors that name the line and key when it is wrong.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { AgentConfigError, defaultStateDir, parseAgentConfig } from '../agent/config.js';
import { systemdUnit } from '../agent/service.js';
import { EXAMPLE_CONFIG } from '../scripts/build-agent.js';
import { tempDir } from './helpers/printing-org.js';
import { runProcess } from './helpers/processes.js';
import { runSpool } from './helpers/spool.js';

const PATH = '/etc/spool/agent.toml';

function problems(source: string): string[] {
  try {
    parseAgentConfig(source, PATH);
  } catch (error) {
    if (error instanceof AgentConfigError) return error.problems;
    throw error;
  }
  return [];
}

test('a full configuration file is read, with paths relative to its folder', (t) => {
  const config = parseAgentConfig(
    [
      'server = ["link-eu.example.com:443", "link-us.example.com:443"]',
      'token_file = "agent.token"',
      'state_dir = "/var/lib/spool-agent"',
      'log_level = "debug"',
      '',
      '[tls]',
      'ca = "ca.pem"',
      '',
      '[cups]',
      'server = "localhost:631"',
      '',
      '[metrics]',
      'port = 9464',
      '',
      '[printers]',
      'desk = "file:out"',
      'labels = "raw:192.168.1.20:9100"',
      '"*" = "cups:*"',
      '',
    ].join('\n'),
    PATH,
  );
  t.is(config.server, 'link-eu.example.com:443,link-us.example.com:443');
  t.is(config.tokenFile, '/etc/spool/agent.token');
  t.is(config.stateDir, '/var/lib/spool-agent');
  t.is(config.logLevel, 'debug');
  t.deepEqual(config.tls, { enabled: true, ca: '/etc/spool/ca.pem' });
  t.is(config.cupsServer, 'localhost:631');
  t.deepEqual(config.metrics, { port: 9464 });
  t.deepEqual(config.printers, [
    { name: 'desk', backend: { kind: 'file', dir: '/etc/spool/out' } },
    { name: 'labels', backend: { kind: 'raw', host: '192.168.1.20', port: 9100 } },
    { name: '*', backend: { kind: 'cups', queue: '*' } },
  ]);
});

test('a TOML syntax error names its line and column', (t) => {
  const found = problems('server = "a:1"\n\n[printers]\ndesk = file:/tmp\n');
  t.is(found.length, 1);
  t.regex(found[0] as string, /^line 4, column \d+: /);
});

test('the usual slips say how to mend them: a value without quotes, a misspelt table', (t) => {
  const unquoted = t.throws(() => parseAgentConfig('server = 127.0.0.1:7070\n', PATH), {
    instanceOf: AgentConfigError,
  });
  t.regex(
    unquoted?.message ?? '',
    /^\/etc\/spool\/agent\.toml: line 1, column \d+: .*; a text value needs quotes: server = "127\.0\.0\.1:7070"$/,
  );
  const table = t.throws(
    () => parseAgentConfig('server = "a:1"\n\n[printer]\ndesk = "file:/srv/out"\n', PATH),
    { instanceOf: AgentConfigError },
  );
  t.regex(table?.message ?? '', /: line 3: printer: unknown key; expected one of .*printers/);
});

test('each bad key is named with its line, all at once', (t) => {
  const source = [
    'server = "spool.example.com:7070"', // 1
    'token = "svc_dev_abc"', // 2
    'log_level = "loud"', // 3
    'colour = "blue"', // 4
    '', // 5
    '[tls]', // 6
    'enabled = "yes"', // 7
    '', // 8
    '[printers]', // 9
    'desk = "file:/tmp/out"', // 10
    'fax = "fax:555-1234"', // 11
    '"bad name" = "file:/tmp"', // 12
    '[metrics]', // 13
    'port = 70000', // 14
  ].join('\n');
  const found = problems(source);
  t.deepEqual(
    found.map((p) => p.split(': ').slice(0, 2).join(': ')),
    [
      'line 4: colour',
      'line 3: log_level',
      'line 7: tls.enabled',
      'line 14: metrics.port',
      'line 11: printers.fax',
      'line 12: printers.bad name',
    ],
  );
  t.true(found.some((p) => p.includes('unknown backend "fax"')));
  // The message a station owner sees names the file too.
  const error = t.throws(() => parseAgentConfig(source, PATH), { instanceOf: AgentConfigError });
  t.true(error?.message.startsWith(`${PATH}:\n  - `));
});

test('token and token_file together, or an empty server, are refused', (t) => {
  const found = problems('server = ""\ntoken = "svc_dev_a"\ntoken_file = "/etc/spool/t"\n');
  t.deepEqual(
    found.map((p) => p.split(': ').slice(0, 2).join(': ')),
    ['line 1: server', 'line 3: token_file'],
  );
});

test('a server given as a URL or without its port is named with the other problems', (t) => {
  const found = problems('server = "http://spool.example.com"\ncolour = "blue"\n');
  t.deepEqual(
    found.map((p) => p.split(': ').slice(0, 2).join(': ')),
    ['line 2: colour', 'line 1: server'],
  );
  t.true(found.some((p) => p.includes('is a URL: give the station link')));
  const portless = problems('server = ["a.example.com:7070", "b.example.com"]\n');
  t.is(portless.length, 1);
  t.regex(portless[0] ?? '', /"b\.example\.com" has no port/);
});

test('the state directory is fixed, not the folder the agent started from', (t) => {
  t.is(defaultStateDir({ STATE_DIRECTORY: '/var/lib/spool-agent' }, 1000), '/var/lib/spool-agent');
  t.is(defaultStateDir({}, 0), '/var/lib/spool-agent');
  t.is(
    defaultStateDir({ XDG_STATE_HOME: '/home/a/.state', HOME: '/home/a' }, 1000),
    '/home/a/.state/spool-agent',
  );
  t.is(defaultStateDir({ HOME: '/home/a' }, 1000), '/home/a/.local/state/spool-agent');
});

test('the systemd unit runs the agent hardened, restarting, with its token as a credential', (t) => {
  const config = parseAgentConfig(
    'server = "a:1"\ntoken_file = "/etc/spool/agent.token"\n[printers]\ndesk = "file:/srv/printed"\n',
    PATH,
  );
  const unit = systemdUnit({
    exec: ['/opt/spool-agent/bin/spool-agent'],
    configPath: PATH,
    config,
  });
  const lines = unit.split('\n');
  for (const line of [
    'ExecStart=/opt/spool-agent/bin/spool-agent run --config /etc/spool/agent.toml',
    'Restart=always',
    // A refused token stops the agent for good: restarting it every 5 s would change nothing.
    'RestartPreventExitStatus=78',
    'DynamicUser=yes',
    'StateDirectory=spool-agent',
    'LoadCredential=device-token:/etc/spool/agent.token',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'ReadWritePaths=/srv/printed',
    'WantedBy=multi-user.target',
  ]) {
    t.true(lines.includes(line), line);
  }
  t.false(unit.includes('svc_dev_'));
});

test('install-service --dry-run prints the unit for the configuration, and warns of an inline token, a state_dir and /tmp', async (t) => {
  const dir = await tempDir('spool-agent-config-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'out'));
  const config = join(dir, 'agent.toml');
  await writeFile(
    config,
    `server = "localhost:7070"\ntoken = "svc_dev_inline"\nstate_dir = "/tmp/spool-agent-state"\n[printers]\ndesk = "file:/tmp/spool-printed"\n`,
  );
  const unitFile = join(dir, 'unit.service');
  const result = await runSpool(
    ['agent', 'install-service', '--dry-run', '--config', config, '--unit-file', unitFile],
    {},
  );
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^\[Unit\]/);
  t.regex(result.stdout, new RegExp(`^ExecStart=.+ agent run --config ${config}$`, 'm'));
  t.regex(result.stdout, /^Restart=always$/m);
  t.regex(result.stdout, /^DynamicUser=yes$/m);
  t.regex(result.stdout, /^ReadWritePaths=\/tmp\/spool-printed$/m);
  t.false(result.stdout.includes('svc_dev_inline'));
  t.regex(result.stderr, /holds the token itself/);
  // What the unit's own sandbox would break, said before it is installed.
  t.regex(result.stderr, /sets state_dir \(\/tmp\/spool-agent-state\); under systemd leave it out/);
  t.regex(result.stderr, /state_dir \/tmp\/spool-agent-state is under \/tmp/);
  t.regex(
    result.stderr,
    /printer desk writes to \/tmp\/spool-printed, which the service, with a \/tmp of its own \(PrivateTmp=yes\), cannot share/,
  );
  // A dry run writes nothing.
  await t.throwsAsync(() => import('node:fs/promises').then((fs) => fs.access(unitFile)));

  // Without --dry-run it writes the unit where it is told.
  const written = await runSpool(
    ['agent', 'install-service', '--config', config, '--unit-file', unitFile],
    {},
  );
  t.is(written.code, 0, written.stderr);
  t.regex(written.stdout, /systemctl daemon-reload && systemctl enable --now unit.service/);
});

test('a bad configuration file stops the agent before it starts, naming the line', async (t) => {
  const dir = await tempDir('spool-agent-config-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const config = join(dir, 'agent.toml');
  await writeFile(config, 'server = "localhost:7070"\n[printers]\ndesk = "fax:1"\n');
  const result = await runSpool(['agent', '--state-dir', join(dir, 'state')], {
    SPOOL_AGENT_CONFIG: config,
    SPOOL_DEVICE_TOKEN: 'svc_dev_x',
  });
  t.is(result.code, 1);
  t.regex(result.stderr, new RegExp(`${config}: line 3: printers.desk: invalid printer`));
});

test('an agent started without a token or printers, and with a port-less --server, is told all three at once', async (t) => {
  const dir = await tempDir('spool-agent-config-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // A configuration file that sets nothing, so no file on the machine is read.
  const config = join(dir, 'agent.toml');
  await writeFile(config, '');
  const result = await runSpool(
    ['agent', '--server', 'spool.example.com', '--state-dir', join(dir, 'state')],
    { SPOOL_AGENT_CONFIG: config },
  );
  t.is(result.code, 1);
  t.regex(result.stderr, /the agent cannot start:\n/);
  t.regex(result.stderr, /\n {2}- server "spool\.example\.com" has no port: give HOST:PORT/);
  t.regex(result.stderr, /\n {2}- give the station token: token_file \(or token\)/);
  t.regex(result.stderr, /\n {2}- give at least one printer: a \[printers\] table/);
});

test('systemd accepts the unit, and rates its exposure low', async (t) => {
  const analyze = await runProcess('/bin/sh', ['-c', 'command -v systemd-analyze'], {
    PATH: process.env.PATH ?? '',
  });
  if (analyze.code !== 0) {
    t.log('SKIPPED: systemd-analyze is not installed (apt-get install systemd)');
    t.pass();
    return;
  }
  const dir = await tempDir('spool-agent-unit-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'out'));
  const config = join(dir, 'agent.toml');
  await writeFile(
    config,
    `server = "localhost:7070"\ntoken_file = "${join(dir, 'token')}"\n[printers]\ndesk = "file:${join(dir, 'out')}"\n`,
  );
  const unit = join(dir, 'spool-agent.service');
  const written = await runSpool(
    ['agent', 'install-service', '--config', config, '--unit-file', unit],
    {},
  );
  t.is(written.code, 0, written.stderr);
  const env = { PATH: process.env.PATH ?? '', SYSTEMD_LOG_LEVEL: 'warning' };
  const verify = await runProcess('systemd-analyze', ['verify', unit], env);
  t.is(verify.code, 0, verify.stderr);
  t.is(verify.stderr.trim(), '');
  const security = await runProcess(
    'systemd-analyze',
    ['security', '--offline=true', '--threshold=20', unit],
    env,
  );
  const level = /Overall exposure level for spool-agent\.service: ([\d.]+) (\w+)/.exec(
    security.stdout,
  );
  t.truthy(level, security.stdout + security.stderr);
  t.true(Number(level?.[1]) <= 2, `exposure ${level?.[1]} ${level?.[2]}`);
});

test('the example in docs/agent.md and the one in the package are valid configurations', async (t) => {
  const doc = await readFile(join(import.meta.dirname, '..', 'docs', 'agent.md'), 'utf8');
  const example = /```toml\n([\s\S]*?)```/.exec(doc)?.[1];
  t.truthy(example);
  const config = parseAgentConfig(example ?? '', PATH);
  t.deepEqual(
    config.printers.map((p) => p.name),
    ['desk', 'labels', 'front', 'office', '*'],
  );
  t.is(parseAgentConfig(EXAMPLE_CONFIG, PATH).printers.length, 1);
});

test('an agent that kept its journal in ./.spool-agent, the old default, is not started on an empty one', async (t) => {
  const dir = await tempDir('spool-agent-old-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, '.spool-agent'));
  await writeFile(join(dir, '.spool-agent', 'journal.jsonl'), '');
  const bin = join(import.meta.dirname, '..', 'bin', 'spool.js');
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: join(dir, 'home'),
    XDG_STATE_HOME: join(dir, 'state'),
    // The default state directory, as systemd would give it: as root it is otherwise the machine's
    // own /var/lib/spool-agent, which an agent run on this machine may have filled.
    STATE_DIRECTORY: join(dir, 'state', 'spool-agent'),
    SPOOL_DEVICE_TOKEN: 'svc_dev_x',
  };
  const args = [bin, 'agent', '--server', '127.0.0.1:1', '--printer', `desk=file:${dir}`];
  const refused = await runProcess(process.execPath, args, env, { cwd: dir, timeoutMs: 60_000 });
  t.is(refused.code, 1);
  t.regex(refused.stderr, /\.spool-agent holds a journal from an agent that kept its state there/);
  t.regex(refused.stderr, /give --state-dir \.spool-agent, so that no job prints twice/);
});
