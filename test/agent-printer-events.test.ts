/**
 * Printer events (agent/printer-events.ts) and the status poll they slow down: the printer set
 * with a fake feed and timers the tests fire, so that what is read, and when the poll is due, is
 * decided by the events and the tests alone; and the IPP feed against a printer here that holds
 * Get-Notifications until something happens, as IPP Everywhere printers may.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { pino } from 'pino';
import { AS_IS_CAPABILITIES, type Backend } from '../agent/backends/backend.js';
import {
  type Attribute,
  decodeResponse,
  encodeRequest,
  GROUP,
  IppError,
  integer,
  OPERATION,
  operationAttributes,
  STATUS,
  TAG,
} from '../agent/ipp/protocol.js';
import type { Lease, Notifications } from '../agent/ipp/subscriptions.js';
import type { EventFeed } from '../agent/printer-events.js';
import { parsePrinterSpec } from '../agent/printer-spec.js';
import { PrinterSet } from '../agent/printers.js';
import type { PrinterReport } from '../gen/spool/v1/stations.js';
import type { Timers } from '../lib/clock.js';
import type { PrinterStatusName } from '../lib/printer-status.js';

const test = anyTest as TestFn<unknown>;

const POLL_MS = 5_000;
const WATCHED_POLL_MS = 60_000;
const ASK_EVERY_MS = 1_000;
const LEASE_SECONDS = 300;
/** Backoff waits are below this, which tells them from the other timers. */
const BACKOFF_MS = 10;

/** Timers that fire only when a test fires them. */
class FakeTimers implements Timers {
  readonly #pending = new Set<{ fire: () => void; ms: number }>();

  set(fire: () => void, ms: number): unknown {
    const timer = { fire, ms };
    this.#pending.add(timer);
    return timer;
  }

  clear(timer: unknown): void {
    this.#pending.delete(timer as { fire: () => void; ms: number });
  }

  /** The delays of the timers set and neither fired nor cleared. */
  delays(): number[] {
    return [...this.#pending].map((t) => t.ms);
  }

  /** The poll's next delay: the one pending timer set for either poll interval. */
  poll(): number | undefined {
    const polls = this.delays().filter((ms) => ms === POLL_MS || ms === WATCHED_POLL_MS);
    if (polls.length > 1) throw new Error(`two polls are pending: ${polls.join(', ')}`);
    return polls[0];
  }

  /** Fires the pending timer whose delay matches. */
  fire(match: (ms: number) => boolean): void {
    const timer = [...this.#pending].find((t) => match(t.ms));
    if (!timer) throw new Error(`no such timer among ${this.delays().join(', ')}`);
    this.#pending.delete(timer);
    timer.fire();
  }
}

interface Held {
  id: number;
  sequence: number;
  signal: AbortSignal;
  resolve(answer: Notifications): void;
  reject(error: Error): void;
}

/** A feed whose Get-Notifications are held until the test answers them. */
class FakeFeed implements EventFeed {
  readonly key = 'the fake server';
  subscriptions = 0;
  readonly renewed: number[] = [];
  readonly cancelled: number[] = [];
  /** What Create-Printer-Subscriptions throws, if anything. */
  refusal: Error | undefined;
  #held: Held | undefined;
  #onAsk: (() => void) | undefined;

  async subscribe(seconds: number): Promise<Lease> {
    this.subscriptions += 1;
    if (this.refusal) throw this.refusal;
    return { id: 100 + this.subscriptions, seconds };
  }

  notifications(id: number, sequence: number, signal: AbortSignal): Promise<Notifications> {
    return new Promise((resolve, reject) => {
      const held: Held = { id, sequence, signal, resolve, reject };
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      this.#held = held;
      this.#onAsk?.();
    });
  }

  async renew(id: number, seconds: number): Promise<number> {
    this.renewed.push(id);
    return seconds;
  }

  async cancel(id: number): Promise<void> {
    this.cancelled.push(id);
  }

  /** The Get-Notifications the watch is waiting on, once it asks. */
  async asked(): Promise<Held> {
    if (!this.#held) await new Promise<void>((resolve) => (this.#onAsk = resolve));
    const held = this.#held;
    if (!held) throw new Error('unreachable');
    return held;
  }

  /** Answers the held request (with events when given their sequence numbers). */
  async answer(sequences: number[] = []): Promise<void> {
    const held = await this.asked();
    this.#held = undefined;
    held.resolve({ sequences, events: sequences.map(() => 'printer-state-changed'), ended: false });
  }

  async fail(error: Error): Promise<void> {
    const held = await this.asked();
    this.#held = undefined;
    held.reject(error);
  }
}

/** Lets the promise chains that the last step started run to their ends. */
async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

interface Line {
  level: number;
  msg: string;
  err?: string;
}

/** A printer set of one printer, `front`, whose status the test sets; its feed and timers fakes. */
async function printerSet(t: ExecutionContext<unknown>, feed: EventFeed | undefined) {
  const timers = new FakeTimers();
  const lines: Line[] = [];
  let status: PrinterStatusName = 'ready';
  let reads = 0;
  const backend: Backend = {
    print: () => Promise.reject(new Error('not in these tests')),
    status: async () => {
      reads += 1;
      return { status, detail: '', capabilities: AS_IS_CAPABILITIES };
    },
  };
  const changes: PrinterReport[][] = [];
  let changed: (() => void) | undefined;
  const set = new PrinterSet({
    specs: [parsePrinterSpec('front=file:/nowhere')],
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) }),
    statusIntervalMs: POLL_MS,
    watchedStatusIntervalMs: WATCHED_POLL_MS,
    createBackend: () => backend,
    timers,
    events: {
      askEveryMs: ASK_EVERY_MS,
      leaseSeconds: LEASE_SECONDS,
      backoff: { initialMs: BACKOFF_MS, maxMs: BACKOFF_MS },
      random: () => 0.5,
      feed: () => feed,
    },
  });
  await set.refresh();
  set.start((reports) => {
    changes.push(reports);
    changed?.();
  });
  t.teardown(() => set.stop());
  return {
    set,
    timers,
    lines,
    changes,
    reads: () => reads,
    setStatus(next: PrinterStatusName) {
      status = next;
    },
    /** Resolves with the next list `onChange` is given. */
    nextChange(): Promise<PrinterReport[]> {
      const before = changes.length;
      return new Promise((resolve) => {
        changed = () => {
          const list = changes[before];
          if (list) resolve(list);
        };
      });
    },
  };
}

const isBackoff = (ms: number) => ms < BACKOFF_MS;

test('a server that takes no subscriptions is polled at the short interval, asked again with backoff, and said so once', async (t) => {
  const feed = new FakeFeed();
  feed.refusal = new IppError(
    'the fake server answered server-error-operation-not-supported',
    STATUS.operationNotSupported,
  );
  const s = await printerSet(t, feed);
  await settled();
  t.is(feed.subscriptions, 1);
  t.is(s.timers.poll(), POLL_MS);

  // The poll goes on at its short interval...
  const reads = s.reads();
  s.timers.fire((ms) => ms === POLL_MS);
  await settled();
  t.is(s.reads(), reads + 1);
  t.is(s.timers.poll(), POLL_MS);

  // ...and the subscription is asked for again after a backoff, which changes nothing.
  s.timers.fire(isBackoff);
  await settled();
  t.is(feed.subscriptions, 2);
  t.is(s.timers.poll(), POLL_MS);
  t.true(s.timers.delays().some(isBackoff), 'and again later');

  const said = s.lines.filter((l) => l.msg.includes('printer events'));
  t.deepEqual(
    said.map((l) => [l.level, l.msg]),
    [[30, 'no printer events from the fake server: statuses are read every 5 s']],
  );
  t.regex(said[0]?.err ?? '', /server-error-operation-not-supported/);
});

test('while the subscription works the poll runs at the long interval; a lost connection brings the short one back until it works again', async (t) => {
  const feed = new FakeFeed();
  const s = await printerSet(t, feed);
  await feed.asked();
  t.is(s.timers.poll(), POLL_MS, 'short until the server has answered');

  await feed.answer();
  await settled();
  t.is(s.timers.poll(), WATCHED_POLL_MS);

  s.timers.fire((ms) => ms === ASK_EVERY_MS);
  await feed.fail(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
  await settled();
  t.is(s.timers.poll(), POLL_MS);

  // Asked again after a backoff, with the same subscription, which the server still has.
  s.timers.fire(isBackoff);
  const again = await feed.asked();
  t.is(again.id, 101);
  t.is(feed.subscriptions, 1);
  await feed.answer();
  await settled();
  t.is(s.timers.poll(), WATCHED_POLL_MS);

  t.deepEqual(
    s.lines.filter((l) => l.msg.includes('printer events')).map((l) => [l.level, l.msg]),
    [
      [30, 'printer events from the fake server: statuses are read as they change'],
      [
        40,
        'printer events from the fake server stopped: statuses are read every 5 s until they come back',
      ],
      [30, 'printer events from the fake server: statuses are read as they change'],
    ],
  );
});

test('an event reads the statuses at once and reports the change, with the poll a minute away', async (t) => {
  const feed = new FakeFeed();
  const s = await printerSet(t, feed);
  await feed.answer();
  await settled();
  s.timers.fire((ms) => ms === ASK_EVERY_MS);
  const held = await feed.asked();
  t.is(held.sequence, 1);

  s.setStatus('out_of_paper');
  const change = s.nextChange();
  await feed.answer([1]);
  t.like((await change)[0], { name: 'front', status: 'out_of_paper' });
  t.is(s.timers.poll(), WATCHED_POLL_MS, 'no poll fired');

  // The next question asks for what follows the event seen.
  t.is((await feed.asked()).sequence, 2);
});

test('a subscription the server forgot is made again at once, with no change of mode', async (t) => {
  const feed = new FakeFeed();
  const s = await printerSet(t, feed);
  await feed.answer();
  await settled();
  s.timers.fire((ms) => ms === ASK_EVERY_MS);
  await feed.fail(new IppError('the fake server answered client-error-not-found', STATUS.notFound));
  const next = await feed.asked();
  t.is(feed.subscriptions, 2);
  t.is(next.id, 102);
  t.is(next.sequence, 1);
  t.is(s.timers.poll(), WATCHED_POLL_MS);
  t.false(s.timers.delays().some(isBackoff));
  t.is(s.lines.filter((l) => l.msg.includes('printer events')).length, 1);
});

test('a lease is renewed when half of it has gone, and cancelled at a stop, which ends the held request at once', async (t) => {
  const feed = new FakeFeed();
  const s = await printerSet(t, feed);
  await feed.answer();
  await settled();
  s.timers.fire((ms) => ms === (LEASE_SECONDS * 1000) / 2);
  await settled();
  t.deepEqual(feed.renewed, [101]);
  t.true(s.timers.delays().includes((LEASE_SECONDS * 1000) / 2), 'renewed again later');

  s.timers.fire((ms) => ms === ASK_EVERY_MS);
  const held = await feed.asked();
  await s.set.stop();
  t.true(held.signal.aborted);
  t.deepEqual(feed.cancelled, [101]);
  t.deepEqual(s.timers.delays(), [], 'no timer left');
});

test('a job waiting for its printer brings the short poll back while it waits', async (t) => {
  const feed = new FakeFeed();
  const s = await printerSet(t, feed);
  await feed.answer();
  await settled();
  t.is(s.timers.poll(), WATCHED_POLL_MS);

  // A printer that did not take a job may have told nobody (lp refused by a queue).
  const waiting = s.set.untilPrintable('front');
  t.is(s.timers.poll(), POLL_MS);
  s.timers.fire((ms) => ms === POLL_MS);
  await waiting;
  await settled();
  t.is(s.timers.poll(), WATCHED_POLL_MS);
});

test('printers without events keep the poll short, whatever the others', async (t) => {
  const s = await printerSet(t, undefined);
  await settled();
  t.is(s.timers.poll(), POLL_MS);
  t.false(s.lines.some((l) => l.msg.includes('printer events')));
});

// ── The IPP feed, against a printer that holds Get-Notifications ──

interface HoldingPrinter {
  uri: string;
  /** Its `printer-state-reasons`. */
  reasons: string[];
  /** The operation of each request, in order. */
  operations: number[];
  /** Get-Notifications whose connection closed before they were answered. */
  abandoned: number;
  /** Something changed: the held Get-Notifications (or the next) is answered with an event. */
  announce(): void;
  /** Resolves once a Get-Notifications is held. */
  holding(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An IPP printer here that answers Get-Printer-Attributes with its `reasons`, takes a
 * subscription, and holds Get-Notifications until it has an event to send.
 */
async function holdingPrinter(): Promise<HoldingPrinter> {
  let events = 0;
  let held: (() => void) | undefined;
  let onHold: (() => void) | undefined;
  const respond = (
    res: ServerResponse,
    requestId: number,
    groups: Array<{ tag: number; attributes: Attribute[] }>,
  ) => {
    // A response encodes like a request, its status (here 0, successful-ok) where the operation
    // code would be.
    const body = encodeRequest({
      operation: 0,
      requestId,
      groups: [{ tag: GROUP.operation, attributes: operationAttributes(STATUS_OK) }, ...groups],
    });
    res.writeHead(200, { 'Content-Type': 'application/ipp' }).end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = decodeResponse(Buffer.concat(chunks));
      const operation = request.status;
      printer.operations.push(operation);
      const { requestId } = request;
      if (operation === OPERATION.getPrinterAttributes) {
        respond(res, requestId, [
          {
            tag: GROUP.printer,
            attributes: [
              { tag: TAG.enum, name: 'printer-state', values: [3] },
              { tag: TAG.keyword, name: 'printer-state-reasons', values: printer.reasons },
              { tag: TAG.boolean, name: 'printer-is-accepting-jobs', values: [true] },
            ],
          },
        ]);
      } else if (operation === OPERATION.createPrinterSubscriptions) {
        respond(res, requestId, [
          {
            tag: GROUP.subscription,
            attributes: [{ tag: TAG.integer, name: 'notify-subscription-id', values: [42] }],
          },
        ]);
      } else if (operation === OPERATION.getNotifications) {
        const asked = request.groups[0]?.attributes ?? new Map();
        const from = integer(asked, 'notify-sequence-numbers') ?? 1;
        const reply = () => {
          const since = [];
          for (let n = from; n <= events; n++) {
            since.push({
              tag: GROUP.eventNotification,
              attributes: [
                { tag: TAG.integer, name: 'notify-subscription-id', values: [42] },
                { tag: TAG.integer, name: 'notify-sequence-number', values: [n] },
                {
                  tag: TAG.keyword,
                  name: 'notify-subscribed-event',
                  values: ['printer-state-changed'],
                },
              ],
            });
          }
          respond(res, requestId, since);
        };
        if (events >= from) {
          reply();
          return;
        }
        held = reply;
        res.on('close', () => {
          if (!res.writableEnded) printer.abandoned += 1;
        });
        onHold?.();
      } else {
        respond(res, requestId, []);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const printer: HoldingPrinter = {
    uri: `ipp://127.0.0.1:${port}/ipp/print`,
    reasons: ['none'],
    operations: [],
    abandoned: 0,
    announce() {
      events += 1;
      const reply = held;
      held = undefined;
      reply?.();
    },
    holding: () =>
      new Promise<void>((resolve) => {
        if (held) resolve();
        else onHold = resolve;
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return printer;
}

const STATUS_OK: Attribute = { tag: TAG.text, name: 'status-message', values: ['successful-ok'] };

test('an IPP printer that holds Get-Notifications: what it announces is read at once, and a stop ends the held request and cancels the subscription', async (t) => {
  const printer = await holdingPrinter();
  t.teardown(() => printer.close());
  // The poll's timer never fires here: every read after the first comes from an event.
  const timers = new FakeTimers();
  let changed: (list: PrinterReport[]) => void = () => {};
  const set = new PrinterSet({
    specs: [parsePrinterSpec(`front=${printer.uri}`)],
    logger: pino({ level: 'silent' }),
    statusIntervalMs: POLL_MS,
    watchedStatusIntervalMs: WATCHED_POLL_MS,
    timers,
  });
  await set.refresh();
  t.like(set.reports()[0], { status: 'ready' });
  set.start((reports) => changed(reports));
  t.teardown(() => set.stop());
  await printer.holding();

  printer.reasons = ['media-empty-error'];
  const change = new Promise<PrinterReport[]>((resolve) => (changed = resolve));
  printer.announce();
  t.like((await change)[0], { name: 'front', status: 'out_of_paper' });

  // Held again for what follows; the stop ends it rather than wait for the printer.
  await printer.holding();
  await set.stop();
  t.is(printer.abandoned, 1);
  t.is(printer.operations.at(-1), OPERATION.cancelSubscription);
  t.deepEqual(timers.delays(), []);
});
