import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { runSpool, spawnSpool } from './helpers/spool.js';

test('an agent pointed at an HTTP port says once that it is not the station link, and keeps retrying', async (t) => {
  // Spool's HTTP port, as far as the agent can tell: an HTTP/1.1 server.
  const http = createServer((_req, res) => res.end('{}'));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.teardown(() => http.close());
  const address = http.address();
  const server = `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      server,
      '--token',
      `svc_dev_${'a'.repeat(43)}`,
      '--printer',
      `desk=file:${join(dir, 'printed')}`,
      '--state-dir',
      join(dir, 'state'),
    ],
    { LOG_LEVEL: 'info' },
  );
  t.teardown(() => agent.stop());

  await agent.waitFor(/looks like an HTTP server/, 30_000);
  // Three more failed attempts: the agent keeps going, and says it only once.
  await agent.waitFor(/(station link down; reconnecting[\s\S]*){4}/, 30_000);
  const lines = agent
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string | number; msg: string });
  const errors = lines.filter((l) => /looks like an HTTP server/.test(l.msg));
  t.is(errors.length, 1);
  t.is(
    errors[0]?.msg,
    `${server} looks like an HTTP server, not Spool's station link; the station port is STATION_PORT, 7070 by default (the agent keeps retrying)`,
  );
  t.true(errors[0]?.level === 'error' || errors[0]?.level === 50);
  // `spool agent status` gives the same reason as its last error, not gRPC's words for it.
  const status = await runSpool(['agent', 'status', '--state-dir', join(dir, 'state')], {});
  t.regex(
    status.stdout,
    new RegExp(
      `^last error: .*${server.replace(/\./g, '\\.')} looks like an HTTP server, not Spool's station link`,
      'm',
    ),
  );
  t.notRegex(status.stdout, /Resolution note/);
  t.is(agent.child.exitCode, null, 'the agent is still running');
  t.is(await agent.stop(), 0);
});
