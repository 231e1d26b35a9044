/**
 * The private network the IPP tests run in (DESIGN.md, "IPP printers and print confirmation"):
 * `ippeveprinter` needs DNS-SD, so the IPP phase of `npm test` runs in a network namespace of its
 * own (`unshare --net`) with a system D-Bus and an `avahi-daemon` limited to its `lo`, started
 * here. Nothing it advertises or serves leaves the namespace, and every process in it ends with it
 * (`unshare --pid --kill-child`).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Process, runProcess, spawnProcess } from './processes.js';

/** The programs the IPP phase needs, with the Debian package of each. */
const PROGRAMS: [program: string, pkg: string][] = [
  ['unshare', 'util-linux'],
  ['ip', 'iproute2'],
  ['dbus-daemon', 'dbus'],
  ['avahi-daemon', 'avahi-daemon'],
  ['ippeveprinter', 'cups-ipp-utils'],
];

const AVAHI_RUN = '/run/avahi-daemon';

const SBIN_PATH = `${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

/** The Debian packages of the programs missing here. */
export async function missingNetnsPrograms(): Promise<string[]> {
  const missing: string[] = [];
  for (const [program, pkg] of PROGRAMS) {
    const found = await runProcess('/bin/sh', ['-c', `command -v ${program}`], {
      PATH: SBIN_PATH,
    });
    if (found.code !== 0) missing.push(pkg);
  }
  return missing;
}

/**
 * Runs `node test/run.ts --ipp ARGS` inside a new network, mount and pid namespace, its output
 * on ours; resolves with its exit code.
 */
export function runInPrivateNetwork(runScript: string, args: string[]): Promise<number> {
  // Unprivileged, the user stays itself in a user namespace with every capability there (not
  // root: PostgreSQL would then want another user, which such a namespace does not have).
  const rootless = process.getuid?.() !== 0 ? ['--map-current-user', '--keep-caps'] : [];
  const child = spawn(
    'unshare',
    [
      '--net',
      '--mount',
      '--pid',
      '--fork',
      '--kill-child',
      '--mount-proc',
      ...rootless,
      '--',
      process.execPath,
      '--import',
      'tsx',
      runScript,
      '--ipp',
      ...args,
    ],
    { stdio: 'inherit', env: { ...process.env, SPOOL_TEST_NETNS: '1', PATH: SBIN_PATH } },
  );
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + 15 : 1)));
  });
}

/** Whether this process runs in the namespace {@link runInPrivateNetwork} made. */
export function inPrivateNetwork(): boolean {
  return process.env.SPOOL_TEST_NETNS === '1';
}

export interface PrivateNetwork {
  /** What a process needs to reach the namespace's D-Bus (ippeveprinter registers through it). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * In the namespace: brings `lo` up with multicast, gives avahi a private run directory, and starts
 * D-Bus and avahi-daemon on `lo` only.
 */
export async function startPrivateNetwork(): Promise<PrivateNetwork> {
  const env = { PATH: SBIN_PATH };
  await must(runProcess('ip', ['link', 'set', 'lo', 'up', 'multicast', 'on'], env), 'ip link');
  // avahi-daemon keeps its pid file and socket here; the namespace's own, over the machine's. The
  // folder exists once the machine's avahi-daemon has run; an unprivileged user cannot make it
  // in the machine's /run, so it then gets a /run of its own, which nothing else here uses.
  if (!existsSync(AVAHI_RUN)) {
    await mkdir(AVAHI_RUN).catch(async () => {
      await must(runProcess('mount', ['-t', 'tmpfs', 'tmpfs', '/run'], env), 'mount /run');
      await mkdir(AVAHI_RUN);
    });
  }
  await must(runProcess('mount', ['-t', 'tmpfs', 'tmpfs', AVAHI_RUN], env), 'mount');

  const dir = await mkdtemp(join(tmpdir(), 'spool-netns-'));
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) await avahiAs(uid, process.getgid?.() ?? uid, dir, env);
  const socket = join(dir, 'system_bus_socket');
  await writeFile(join(dir, 'dbus.conf'), dbusConfig(socket));
  await writeFile(join(dir, 'avahi.conf'), AVAHI_CONFIG);
  const started: Process[] = [];
  const stop = async () => {
    for (const p of started.reverse()) await p.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const dbus = spawnProcess(
      'dbus-daemon',
      ['--nofork', '--nopidfile', `--config-file=${join(dir, 'dbus.conf')}`],
      env,
    );
    started.push(dbus);
    await until(() => existsSync(socket), 'D-Bus to listen', dbus);
    const busEnv = { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${socket}` };
    const avahi = spawnProcess(
      'avahi-daemon',
      ['-f', join(dir, 'avahi.conf'), '--no-drop-root', '--no-chroot', '--no-rlimits'],
      { ...env, ...busEnv },
    );
    started.push(avahi);
    await avahi.waitFor(/Server startup complete/, 15_000).catch((error: Error) => {
      throw new Error(`${error.message}\navahi-daemon said:\n${avahi.output()}`);
    });
    return { env: busEnv, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * avahi-daemon insists that its run directory belongs to its `avahi` user, whose uid a user
 * namespace of one mapped user does not have; in the namespace's own /etc/passwd and /etc/group,
 * `avahi` is the user running the tests.
 */
async function avahiAs(
  uid: number,
  gid: number,
  dir: string,
  env: Record<string, string>,
): Promise<void> {
  for (const file of ['passwd', 'group']) {
    const lines = (await readFile(`/etc/${file}`, 'utf8')).split('\n').map((line) => {
      const fields = line.split(':');
      if (fields[0] !== 'avahi') return line;
      fields[2] = String(file === 'passwd' ? uid : gid);
      if (file === 'passwd') fields[3] = String(gid);
      return fields.join(':');
    });
    await writeFile(join(dir, file), lines.join('\n'));
    await must(
      runProcess('mount', ['--bind', join(dir, file), `/etc/${file}`], env),
      `mount /etc/${file}`,
    );
  }
}

async function must(
  result: Promise<{ code: number; stderr: string }>,
  what: string,
): Promise<void> {
  const { code, stderr } = await result;
  if (code !== 0) throw new Error(`${what} failed (${code}): ${stderr.trim()}`);
}

async function until(condition: () => boolean, what: string, process: Process): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}:\n${process.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function dbusConfig(socket: string): string {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
`;
}

const AVAHI_CONFIG = `[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[publish]
publish-workstation=no
publish-hinfo=no
`;
