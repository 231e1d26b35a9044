/**
 * A private `redis-server` for the BullMQ peer: a free port on loopback, a temporary directory,
 * and the durability the comparison asks for (`appendonly yes`, `appendfsync always`: every write
 * is in the log and synced before it is acknowledged; no snapshots).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from '../test/helpers/ports.js';
import { harnessDir } from './stops.js';

export interface RedisServer {
  host: string;
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

function redisBinary(): string {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return 'redis-server';
  } catch {
    throw new Error(
      'redis-server not found on PATH: the BullMQ peer needs it; install it with `apt-get install redis-server` (Debian/Ubuntu), or give --redis HOST:PORT of one to use',
    );
  }
}

export function redisVersion(): string {
  const out = execFileSync(redisBinary(), ['--version'], { encoding: 'utf8' });
  return /v=(\S+)/.exec(out)?.[1] ?? out.trim();
}

export async function startRedis(): Promise<RedisServer> {
  const binary = redisBinary();
  const dir = await harnessDir('spool-bench-redis-');
  const port = await freePort();
  const child: ChildProcess = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir.path,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${output}`)));
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 15_000);
  try {
    await ready;
  } catch (err) {
    await dir.remove();
    throw err;
  } finally {
    clearTimeout(timeout);
  }
  return {
    host: '127.0.0.1',
    port,
    pid: child.pid ?? -1,
    version: redisVersion(),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await once(child, 'exit');
        clearTimeout(timer);
      }
      await dir.remove();
    },
  };
}
