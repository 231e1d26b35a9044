import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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
 * the ephemeral range and never handed out twice by this process.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    if (await canBind(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found');
}
