/**
 * The printers the jobs service creates jobs for, kept in memory so that a new job does not ask
 * the stations service for its printer each time. The stations service owns printers; this is a
 * copy that it keeps honest:
 *
 * - `printer.status` and `station.*` events (heard on core NATS as the stations outbox publishes
 *   them) and `printers.<org>.changed` (a printer deleted, a station moved or deleted) drop the
 *   entries they concern;
 * - an entry is trusted for {@link PRINTER_TTL_MS} at most, which bounds how long a change that
 *   announces itself nowhere (a printer's capabilities reported anew) can go unseen;
 * - a lost connection to NATS empties the cache, since messages may have been missed.
 *
 * A printer read while an eviction of it arrives is not kept, so an eviction is never undone by
 * the read it overtook. Unknown printers are not remembered: the next job asks again.
 */
import type { Printer } from '../../gen/spool/v1/stations.js';
import { type NatsConnection, onConnectionLost, subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';

export const PRINTER_TTL_MS = 30_000;
export const MAX_PRINTERS = 50_000;

interface Entry {
  printer: Printer;
  storedAt: number;
}

const keyOf = (orgId: string, printerId: string) => `${orgId}/${printerId}`;

export class PrinterCache {
  readonly #entries = new Map<string, Entry>();
  /** The keys of each station's cached printers, to drop them together. */
  readonly #byStation = new Map<string, Set<string>>();
  /** Reads in flight, shared by the jobs that need the same printer meanwhile. */
  readonly #reads = new Map<string, Promise<Printer | undefined>>();
  /** Bumped by every eviction, so that a read it overtook is not kept. */
  #generation = 0;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;

  constructor(options: { clock: Clock; ttlMs?: number; maxEntries?: number }) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? PRINTER_TTL_MS;
    this.#maxEntries = options.maxEntries ?? MAX_PRINTERS;
  }

  /** The printer, from memory or from `read` (the stations service). */
  async get(
    orgId: string,
    printerId: string,
    read: () => Promise<Printer | undefined>,
  ): Promise<Printer | undefined> {
    const key = keyOf(orgId, printerId);
    const now = this.#clock.now().getTime();
    const entry = this.#entries.get(key);
    if (entry && now - entry.storedAt < this.#ttlMs) return entry.printer;
    const pending = this.#reads.get(key);
    if (pending) return pending;
    const generation = this.#generation;
    const reading = read().finally(() => this.#reads.delete(key));
    this.#reads.set(key, reading);
    const printer = await reading;
    if (printer && generation === this.#generation) this.#store(key, printer, now);
    return printer;
  }

  /**
   * The organization's printers `printerIds` that exist, from memory or, for those not in it, from
   * one `read` of them all (the stations service's PrintersOf): a pool job's members.
   */
  async getMany(
    orgId: string,
    printerIds: string[],
    read: (missing: string[]) => Promise<Printer[]>,
  ): Promise<Map<string, Printer>> {
    const now = this.#clock.now().getTime();
    const found = new Map<string, Printer>();
    const missing: string[] = [];
    for (const id of printerIds) {
      const entry = this.#entries.get(keyOf(orgId, id));
      if (entry && now - entry.storedAt < this.#ttlMs) found.set(id, entry.printer);
      else missing.push(id);
    }
    if (missing.length === 0) return found;
    const generation = this.#generation;
    for (const printer of await read(missing)) {
      // Printers are kept within the organization asked about only.
      if (printer.orgId !== orgId) continue;
      found.set(printer.id, printer);
      if (generation === this.#generation) this.#store(keyOf(orgId, printer.id), printer, now);
    }
    return found;
  }

  evictPrinter(orgId: string, printerId: string): void {
    this.#generation++;
    this.#drop(keyOf(orgId, printerId));
  }

  evictStation(stationId: string): void {
    this.#generation++;
    for (const key of this.#byStation.get(stationId) ?? []) this.#drop(key);
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#byStation.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #store(key: string, printer: Printer, now: number): void {
    this.#drop(key);
    if (this.#entries.size >= this.#maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#drop(oldest.value);
    }
    this.#entries.set(key, { printer, storedAt: now });
    const keys = this.#byStation.get(printer.stationId) ?? new Set<string>();
    keys.add(key);
    this.#byStation.set(printer.stationId, keys);
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    const keys = this.#byStation.get(entry.printer.stationId);
    keys?.delete(key);
    if (keys?.size === 0) this.#byStation.delete(entry.printer.stationId);
  }
}

/** What `printers.<org>.changed` and the printer and station events say, as far as the cache cares. */
interface PrinterChange {
  org_id?: string;
  data?: { printer_id?: string; station_id?: string };
}

/** Keeps `cache` in step with the stations service. Returns a function that stops listening. */
export function followPrinterChanges(
  nc: NatsConnection,
  cache: PrinterCache,
  logger: Logger,
): () => void {
  const evict = (err: Error | null, json: () => PrinterChange) => {
    if (err) {
      logger.warn({ err }, 'printer change subscription error; emptying the printer cache');
      cache.clear();
      return;
    }
    try {
      const { org_id, data } = json();
      if (data?.station_id) cache.evictStation(data.station_id);
      if (org_id && data?.printer_id) cache.evictPrinter(org_id, data.printer_id);
      if (!data?.station_id && !data?.printer_id) cache.clear();
    } catch {
      cache.clear();
    }
  };
  const subs = [
    subjects.event('*', 'printer.status'),
    subjects.event('*', 'station.*'),
    subjects.anyPrintersChanged,
  ].map((subject) =>
    nc.subscribe(subject, { callback: (err, msg) => evict(err, () => msg.json<PrinterChange>()) }),
  );
  const stopWatching = onConnectionLost(nc, () => cache.clear());
  return () => {
    stopWatching();
    for (const sub of subs) sub.unsubscribe();
  };
}
