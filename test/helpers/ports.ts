import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from '../../lib/processes.js';

/**
 * The ports the kernel hands out for outgoing connections and for `listen(0)`. A port a test picks
 * for a child process to bind later is taken below this range, so that no connection or
 * `listen(0)` elsewhere on the machine can take it in between.
 */
function ephemeralStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/);
    const n = Number(low);
    return Number.isInteger(n) && n > 12_000 ? n : 32_768;
  } catch {
    return 32_768;
  }
}

const LOW = 10_000;
const HIGH = ephemeralStart();
const handedOut = new Set<number>();

/**
 * Ava runs test files in several worker processes, each drawing ports on its own. A port handed out
 * is also claimed by a file named after it in this shared folder, holding the claimant's pid, so
 * another worker cannot draw it while the child it was drawn for has not bound it yet. A claim
 * whose process has exited is taken over.
 */
const CLAIMS = join(tmpdir(), 'spool-test-ports');

function claim(port: number): boolean {
  const file = join(CLAIMS, String(port));
  mkdirSync(CLAIMS, { recursive: true });
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(readFileSync(file, 'utf8'));
    if (owner === process.pid || (Number.isInteger(owner) && owner > 0 && isProcessAlive(owner)))
      return false;
    try {
      unlinkSync(file);
    } catch {
      // another worker took the stale claim over first
    }
  }
  return false;
}

process.once('exit', () => {
  for (const port of handedOut) {
    try {
      unlinkSync(join(CLAIMS, String(port)));
    } catch {
      // already gone
    }
  }
});

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, for a child process to listen on. It is drawn at random below
 * the ephemeral range and never handed out twice while the process that drew it lives, by this
 * process or any other test worker.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    if (!claim(port)) continue;
    handedOut.add(port);
    if (await canBind(port)) return port;
  }
  throw new Error('no free port found');
}
