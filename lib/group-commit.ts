/**
 * Group commit: work that arrives while a group is being committed waits for it, then goes with
 * everything else that arrived meanwhile, as one group. On a quiet process the first group goes
 * as soon as the current turn of the event loop ends, with what that turn submitted; under load
 * the groups grow by themselves, so that the database pays per commit rather than per item. Items
 * keep their order: they are grouped, and groups committed, first come first served, one group at
 * a time.
 *
 * Under load a group can also wait a moment for company ({@link GroupCommitOptions.gatherMs}):
 * when items came in while the last group was committing, the next one waits that long before it
 * goes, and takes everything that came meanwhile. Groups then grow with the rate rather than with
 * the commit's duration alone, which is what keeps them large when the load is split over several
 * replicas, each seeing a share of it. A lone item on a quiet process still goes at the end of its
 * turn.
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

export interface GroupCommitOptions {
  /**
   * How long a group waits for more items when items arrived while the group before it was
   * committing (0, the default: never). It bounds the latency it adds.
   */
  gatherMs?: number;
  /** Waits `ms` (a timer by default; tests give their own). */
  wait?: (ms: number) => Promise<void>;
}

/**
 * The wait the hot groups of the jobs and webhooks services take under load: short beside a job's
 * way from POST to printed, long beside a commit on a quiet database, so that a replica given half
 * of the load still sends groups about as large as one given all of it.
 */
export const GATHER_UNDER_LOAD_MS = 2;

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class GroupCommit<I, R> {
  readonly #commit: (items: I[]) => Promise<Outcome<R>[]>;
  readonly #maxGroup: number;
  readonly #gatherMs: number;
  readonly #wait: (ms: number) => Promise<void>;
  readonly #queue: Waiting<I, R>[] = [];
  #draining = false;

  /**
   * @param commit commits a group and answers its items, in order.
   * @param maxGroup the most items one group takes.
   */
  constructor(
    commit: (items: I[]) => Promise<Outcome<R>[]>,
    maxGroup: number,
    options: GroupCommitOptions = {},
  ) {
    this.#commit = commit;
    this.#maxGroup = maxGroup;
    this.#gatherMs = options.gatherMs ?? 0;
    this.#wait = options.wait ?? timer;
  }

  /**
   * Resolves once the group holding `item` has committed it. On a quiet process the first group
   * goes once the current turn of the event loop is done, so that everything submitted in the
   * same turn (a station's `received` and `result`, the messages of one read) goes together.
   */
  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, ctx: context.active(), resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  /** Items waiting for the group in flight to commit. */
  get waiting(): number {
    return this.#queue.length;
  }

  async #drain(): Promise<void> {
    try {
      let first = true;
      while (this.#queue.length > 0) {
        // Items waiting here came while a group committed: the load is more than one at a time.
        if (!first && this.#gatherMs > 0 && this.#queue.length < this.#maxGroup) {
          await this.#wait(this.#gatherMs);
        }
        first = false;
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
