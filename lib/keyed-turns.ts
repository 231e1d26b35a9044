/**
 * Work that runs one at a time per key within this process, in the order it was asked for, while
 * work under other keys goes on beside it. For writes that SERIALIZABLE would otherwise make
 * conflict with each other (a count checked before an insert, say): run at once, a burst of them
 * fails and retries each other until deadlines pass; in turns, each commits at its first try.
 * Replicas still conflict with each other, and the database keeps that safe. Written here rather
 * than taken from a package: a queue per key is a promise chain of a few lines.
 */
export class KeyedTurns {
  /** The end of the last work asked for under each key that has work waiting or running. */
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` once the work asked for before under `key` has ended, however it ended. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const result = before.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Keys with work waiting or running. */
  get size(): number {
    return this.#tails.size;
  }
}
