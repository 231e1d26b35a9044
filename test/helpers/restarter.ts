/**
 * Starts each process of a fault run again whenever it exits, as Kubernetes restarts a container,
 * and tells the exits the test caused from the others.
 */
import type { SpoolProcess } from './spool.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts each process again whenever it exits, as Kubernetes restarts a container. */
export class Restarter {
  /** Pids the test signalled; the exit of any other process is a failure. */
  readonly #killed = new Set<number>();
  readonly unexpected: string[] = [];
  #stopping = false;

  watch(name: string, current: () => SpoolProcess, respawn: () => Promise<void>) {
    void (async () => {
      for (;;) {
        const process = current();
        const code = await process.exited;
        if (this.#stopping) return;
        const pid = process.child.pid ?? -1;
        if (!this.#killed.has(pid)) {
          this.unexpected.push(`${name} exited with ${code}:\n${process.output().slice(-2000)}`);
        }
        for (;;) {
          try {
            await respawn();
            break;
          } catch {
            if (this.#stopping) return;
            await sleep(1_000);
          }
        }
      }
    })();
  }

  kill(process: SpoolProcess, signal: NodeJS.Signals = 'SIGKILL') {
    this.#killed.add(process.child.pid ?? -1);
    process.child.kill(signal);
  }

  /** Restarts nothing from now on. */
  stop() {
    this.#stopping = true;
  }
}
