/**
 * The ports a command will listen on, checked before it does any work: a taken port found only at
 * bind time shows as a raw gRPC or Node error after migrations and child processes have started.
 */
import { createServer } from 'node:net';

/** A port a command listens on, and the variable that sets it. */
export interface PlannedListener {
  host: string;
  port: number;
  variable: string;
}

/** A port that something else already listens on. */
export class PortInUseError extends Error {
  constructor(listener: PlannedListener, code: string) {
    super(
      code === 'EADDRINUSE'
        ? `port ${listener.port} is in use (${listener.variable}): stop what listens there, or set ${listener.variable} to a free port`
        : `cannot listen on ${listener.host}:${listener.port} (${listener.variable}, ${code}): set ${listener.variable} to another port`,
    );
    this.name = 'PortInUseError';
  }
}

/**
 * Listens on each port for a moment and lets go, throwing `PortInUseError` for the first that
 * cannot be had. Port 0 (any free port) always can. One port given to two listeners is refused
 * first, naming both variables: each is free until the first of the two binds it.
 */
export async function checkPortsFree(listeners: PlannedListener[]): Promise<void> {
  const seen = new Map<number, PlannedListener>();
  for (const listener of listeners) {
    if (listener.port === 0) continue;
    const other = seen.get(listener.port);
    if (other) {
      throw new Error(
        `port ${listener.port} is given twice, as ${other.variable} and ${listener.variable}: give them different ports`,
      );
    }
    seen.set(listener.port, listener);
  }
  for (const listener of listeners) {
    if (listener.port === 0) continue;
    await new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new PortInUseError(listener, err.code ?? err.message)),
      );
      server.listen({ host: listener.host, port: listener.port, exclusive: true }, () =>
        server.close(() => resolve()),
      );
    });
  }
}
