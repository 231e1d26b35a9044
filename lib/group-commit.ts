/**
 * Group commit: work that arrives while a group is being committed waits for it, then goes with
 * everything else that arrived meanwhile, as one group. A lone item on a quiet process goes at
 * once; under load the groups grow by themselves, so that the database pays per commit rather than
 * per item. Items keep their order: they are grouped, and groups committed, first come first
 * served, one group at a time.
 *
 * `commit` answers each item of a group on its own (an item may fail while the others succeed).
 * When it throws, no item of the group can be said to have failed on its own, so each goes again
 * alone, and only the one that still fails is refused.
 */
import { type Context, context } from '@opentelemetry/api';

export type Outcome<R> = { ok: R } | { error: unknown };

interface Waiting<I, R> {
  item: I;
  /** The caller's context, so that the group's work joins the first caller's trace. */
  ctx: Context;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class GroupCommit<I, R> {
  readonly #commit: (items: I[]) => Promise<Outcome<R>[]>;
  readonly #maxGroup: number;
  readonly #queue: Waiting<I, R>[] = [];
  #draining = false;

  /**
   * @param commit commits a group and answers its items, in order.
   * @param maxGroup the most items one group takes.
   */
  constructor(commit: (items: I[]) => Promise<Outcome<R>[]>, maxGroup: number) {
    this.#commit = commit;
    this.#maxGroup = maxGroup;
  }

  /** Resolves once the group holding `item` has committed it. */
  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, ctx: context.active(), resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  /** Items waiting for the group in flight to commit. */
  get waiting(): number {
    return this.#queue.length;
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#queue.splice(0, this.#maxGroup);
        await context.with((group[0] as Waiting<I, R>).ctx, () => this.#commitGroup(group));
      }
    } finally {
      this.#draining = false;
    }
  }

  /** Commits `group` and answers each of its callers; never throws. */
  async #commitGroup(group: Waiting<I, R>[]): Promise<void> {
    let outcomes: Outcome<R>[];
    try {
      outcomes = await this.#commit(group.map((w) => w.item));
    } catch (err) {
      if (group.length === 1) {
        (group[0] as Waiting<I, R>).reject(err);
        return;
      }
      for (const w of group) await this.#commitGroup([w]);
      return;
    }
    group.forEach((w, i) => {
      const outcome = outcomes[i];
      if (outcome && 'ok' in outcome) w.resolve(outcome.ok);
      else w.reject(outcome ? outcome.error : new Error('the group answered no outcome'));
    });
  }
}
