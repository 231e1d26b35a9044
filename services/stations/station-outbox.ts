/**
 * The stations service's outbox: the table its writes queue their messages in, and how a write
 * hands the rows on once committed.
 */
import type { OutboxRow } from '../../lib/outbox.js';

export const OUTBOX_TABLE = 'stations_outbox';

/**
 * Takes the outbox rows of every write once they are committed (a link opened or closed, its
 * printers reported, an online station deleted), for the relay to publish at once; the relay's
 * poll is only for rows a process that died left behind.
 */
export type Committed = (rows: OutboxRow[]) => void;
