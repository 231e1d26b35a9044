/**
 * What must be stopped, pushed as it is started and run last first, so that nothing is stopped
 * before what depends on it. A failure to stop one thing does not keep the others running.
 */
export class Stops {
  readonly #stops: Array<() => Promise<unknown>> = [];

  push(stop: () => Promise<unknown>): void {
    this.#stops.push(stop);
  }

  /** Runs every stop pushed so far, the last pushed first; each runs once. */
  async run(): Promise<void> {
    for (let stop = this.#stops.pop(); stop; stop = this.#stops.pop()) {
      await stop().catch(() => undefined);
    }
  }
}

let signalled = false;

/** Says the harness was told to stop (SIGINT, SIGTERM): the processes it started end now. */
export function markSignalled(): void {
  signalled = true;
}

/** Whether a process ending now was ended by the harness being stopped, not by a failure. */
export function harnessSignalled(): boolean {
  return signalled;
}
