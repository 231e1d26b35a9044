/**
 * The harness's child processes (load generator, simulated agents, ceilings, the BullMQ peer) are
 * Node processes forked with tsx, driven by request/answer messages over the IPC channel. A child
 * exits when its parent goes away, so nothing outlives a run.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Stops } from './stops.js';

// biome-ignore lint/suspicious/noExplicitAny: handler tables are typed by each child module
type Handlers = Record<string, (params: any) => Promise<unknown>>;

interface Request {
  id: number;
  method: string;
  params: unknown;
}

type Answer = { id: number; result: unknown } | { id: number; error: string };

/** A running child and the calls it answers, typed by its handler table. */
export interface Child<H extends Handlers> {
  readonly pid: number;
  readonly name: string;
  call<K extends keyof H & string>(
    method: K,
    ...params: Parameters<H[K]>
  ): Promise<Awaited<ReturnType<H[K]>>>;
  /** Ends the child (SIGTERM, then SIGKILL after two seconds) and waits for it. */
  stop(): Promise<void>;
}

/** Forks `bench/<file>` under tsx and resolves once it says it is ready. */
export async function startChild<H extends Handlers>(
  file: string,
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<Child<H>> {
  const path = fileURLToPath(new URL(file, import.meta.url));
  const child: ChildProcess = fork(path, [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    env: { ...process.env, NODE_OPTIONS: '', ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (message: Answer | { ready: true }) => {
    if ('ready' in message) return;
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if ('error' in message) waiter.reject(new Error(`${file}: ${message.error}`));
    else waiter.resolve(message.result);
  });
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) {
      waiter.reject(new Error(`${file} exited (${code ?? signal}) before it answered`));
    }
    pending.clear();
  });
  await new Promise<void>((resolve, reject) => {
    const onMessage = (m: unknown) => {
      if ((m as { ready?: boolean }).ready) {
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) => reject(new Error(`${file} exited (${code}) at start`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
  return {
    pid: child.pid ?? -1,
    name: file,
    call(method, ...params) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        // A child that has gone (the harness is stopping) fails the call rather than the harness.
        child.send({ id, method, params: params[0] } satisfies Request, (err) => {
          if (!err || !pending.delete(id)) return;
          reject(new Error(`${file}: ${method} could not be sent: ${err.message}`));
        });
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** The stops of the calls in progress, run too when the child is told to stop mid-call. */
const inProgress = new Set<Stops>();

/** How long a child told to stop has to run its calls' stops before it exits anyway. */
const STOP_GRACE_MS = 4_000;

/**
 * Runs a call's `work` with stops of its own (servers to stop, directories to remove), run when
 * the work ends, or at once when the child is told to stop meanwhile (the harness was stopped).
 */
export async function withStops<T>(work: (stops: Stops) => Promise<T>): Promise<T> {
  const stops = new Stops();
  inProgress.add(stops);
  try {
    return await work(stops);
  } finally {
    inProgress.delete(stops);
    await stops.run();
  }
}

/** In a child: answers the parent's calls with `handlers`, then tells the parent it is ready. */
export function serve(handlers: Handlers): void {
  if (!process.send) throw new Error('this module runs as a child of bench/run.ts');
  process.on('message', (message: Request) => {
    const handler = handlers[message.method];
    const answer = (a: Answer) => process.send?.(a);
    if (!handler) {
      answer({ id: message.id, error: `no method ${message.method}` });
      return;
    }
    handler(message.params).then(
      (result) => answer({ id: message.id, result }),
      (err: unknown) =>
        answer({
          id: message.id,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        }),
    );
  });
  // The parent is gone, or stops: so does the work it asked for, undoing what it started.
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // The servers a call was using are going too: what fails because of it no longer matters.
    process.on('unhandledRejection', () => undefined);
    const stopped = Promise.all([...inProgress].map((stops) => stops.run()));
    await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS))]);
    process.exit(0);
  };
  process.on('disconnect', () => void stop());
  process.on('SIGTERM', () => void stop());
  process.send({ ready: true });
}
