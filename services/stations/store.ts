/**
 * The stations tables: locations, stations (device tokens as SHA-256 only), printers, enrollment
 * codes (SHA-256 only) and the replicas that hold the stations' links. Every query on tenant data
 * is scoped by organization, except the lookup by token hash that the link needs to learn which
 * station (and organization) is calling, that of an enrollment code by its hash (the code says
 * which organization), and the sweep of lost replicas' links. Each role is a module of its own;
 * this one puts them together for the callers that take the whole.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { createEnrollmentStore, type EnrollmentStore } from './enrollments.js';
import { createLocationStore, type LocationStore } from './locations.js';
import { createLinkPresence, type LinkPresence } from './presence.js';
import { createPrinterCatalogue, type PrinterCatalogue } from './printer-catalogue.js';
import { createPrinterSync, type PrinterSync } from './printer-sync.js';
import { createReplicaRecords, type ReplicaRecords } from './replica-records.js';
import { createStationCatalogue, type StationCatalogue } from './station-catalogue.js';
import type { Committed } from './station-outbox.js';

/** Everything the stations service keeps in its database. */
export interface StationStore
  extends LocationStore,
    StationCatalogue,
    PrinterCatalogue,
    PrinterSync,
    LinkPresence,
    ReplicaRecords,
    EnrollmentStore {}

/**
 * @param committed takes the outbox rows of every write once they are committed (a link opened
 *   or closed, its printers reported, a location or a station made, changed or deleted, a
 *   printer deleted), for the relay to publish at once; the relay's poll is only for rows a
 *   process that died left behind.
 */
export function createStationStore(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed = () => {},
): StationStore {
  return {
    ...createLocationStore(pool, clock, committed),
    ...createStationCatalogue(pool, clock, committed),
    ...createPrinterCatalogue(pool, clock, committed),
    ...createPrinterSync(pool, clock, committed),
    ...createLinkPresence(pool, clock, committed),
    ...createReplicaRecords(pool),
    ...createEnrollmentStore(pool, clock, committed),
  };
}
