/** Attempts' outcomes waiting for a worker's next round, which records them together. */

import type { ClaimedDelivery } from './claims.js';
import type { AttemptRecord, Recorded } from './outcomes.js';

/** An outcome to record, with whom to tell. */
export interface PendingRecord {
  claimed: ClaimedDelivery;
  result: AttemptRecord;
  retryAt: Date | undefined;
  /** Frees the attempt's place among those claimed and not yet recorded; once. */
  release(): void;
  resolve(recorded: Recorded): void;
  reject(err: unknown): void;
}

/** An outcome as the attempt hands it over. */
export type Unrecorded = Pick<PendingRecord, 'claimed' | 'result' | 'retryAt' | 'release'>;

export class OutcomeQueue {
  #items: PendingRecord[] = [];

  get length(): number {
    return this.#items.length;
  }

  /** Queues an outcome; resolves with what became of it once a round records it. */
  add(item: Unrecorded): Promise<Recorded> {
    return new Promise<Recorded>((resolve, reject) => {
      this.#items.push({ ...item, resolve, reject });
    });
  }

  /**
   * Up to `max` outcomes, in order, a delivery once: a second outcome of a delivery (its claim
   * lapsed and this worker claimed it again) waits for the next round, with those past `max`.
   */
  take(max: number): PendingRecord[] {
    const batch: PendingRecord[] = [];
    const later: PendingRecord[] = [];
    const ids = new Set<string>();
    for (const item of this.#items) {
      if (batch.length < max && !ids.has(item.claimed.id)) {
        ids.add(item.claimed.id);
        batch.push(item);
      } else {
        later.push(item);
      }
    }
    this.#items = later;
    return batch;
  }
}
