/** What a link writes to its agent, in order. */
import { once } from 'node:events';
import type { ServerMessage } from '../../gen/spool/v1/stations.js';
import type { Call } from './link-deps.js';

/**
 * The writes to one agent, one after another: a job's offer and chunks never interleave with
 * another's, and an acceptance never overtakes the offer it follows.
 */
export class AgentOutbound {
  readonly #call: Call;
  readonly #closed: () => boolean;
  #out: Promise<void> = Promise.resolve();

  constructor(call: Call, closed: () => boolean) {
    this.#call = call;
    this.#closed = closed;
  }

  /**
   * Runs `step` once the writes queued before it are done; `failed` takes its error. Resolves
   * when it is over, failed or not.
   */
  queue(step: () => Promise<void>, failed: (err: unknown) => void = () => {}): Promise<void> {
    this.#out = this.#out.then(step).catch(failed);
    return this.#out;
  }

  /** Writes `msg` after the writes queued before it; one the link cannot take is dropped. */
  send(msg: ServerMessage): Promise<void> {
    return this.queue(() => this.write(msg));
  }

  /** Writes `msg` now, waiting while the stream is full; throws once the link is closed. */
  async write(msg: ServerMessage): Promise<void> {
    if (this.#closed()) throw new Error('link closed');
    if (!this.#call.write(msg)) await once(this.#call, 'drain');
  }
}
