/**
 * Which stations are online: a link opened records its station online on it (with the printers
 * its agent reports) and queues `station.online`; a link closed records it offline, and queues
 * `station.offline`, only while it is still the station's current link. Links opening or closing
 * together are recorded together (group commit).
 */
import type pg from 'pg';
import type { PrinterCapabilities, PrinterReport } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { eventMessage } from '../../lib/events.js';
import { GroupCommit, type Outcome } from '../../lib/group-commit.js';
import { addToOutbox, type OutboxMessage } from '../../lib/outbox.js';
import { columns, WriteBatch } from '../../lib/sql.js';
import { type TraceCarrier, traceCarrier } from '../../lib/tracing.js';
import { cleanText } from './agent-input.js';
import {
  type HeldStation,
  type LinkStation,
  type OpenLink,
  toLinkStation,
} from './link-station.js';
import { type PrinterState, syncPrinters } from './printer-sync.js';
import { type Committed, OUTBOX_TABLE } from './station-outbox.js';
import { groupBy, STATION_COLUMNS, type StationRow } from './station-rows.js';

/** The most link opens one transaction records, and the most link closes. */
const MAX_OPENS = 250;

/** A station and, when it has any, one of its printers, as a link open reads them. */
interface LinkStationRow {
  station_id: string;
  station_name: string;
  org_id: string;
  region: string;
  location_id: string | null;
  revoked_at: Date | null;
  token_hash: Buffer;
  /** Whether the station read online before this open. */
  station_online: boolean;
  id: string | null;
  name: string | null;
  status: string | null;
  detail: string | null;
  capabilities: Partial<PrinterCapabilities> | null;
}

/** A link opened: its station, and the ids of the printers its agent reported, by name. */
export interface OpenedLink {
  station: LinkStation;
  printerIds: Record<string, string>;
}

interface LinkOpen {
  tokenHash: Buffer;
  linkId: string;
  printers: PrinterReport[];
  agentVersion: string;
  platform: string;
  trace: TraceCarrier;
}

export interface LinkPresence {
  /**
   * Records a new link as the current one of the station whose device token hashes to
   * `tokenHash`, with its agent's version and platform, and syncs its printers; queues
   * `station.online`. Undefined when no station has
   * the token or it is revoked. Links that open while a group of opens commits go together in
   * the next (group commit).
   */
  linkOpened(
    tokenHash: Buffer,
    linkId: string,
    printers: PrinterReport[],
    agent?: { version?: string; platform?: string },
  ): Promise<OpenedLink | undefined>;
  /**
   * Records the station offline if `linkId` is still its current link, and queues
   * `station.offline`; resolves to whether it was. Links that close while a group of closes
   * commits go together in the next (group commit).
   */
  linkClosed(station: LinkStation, linkId: string): Promise<boolean>;
  /**
   * Records online again the stations whose current link is one of `links` and that read
   * offline (a replica took this one's for lost), and queues `station.online` for each; answers
   * how many.
   */
  linksStillOpen(links: OpenLink[]): Promise<number>;
  /**
   * The stations many device tokens belong to, by the token hash in hex; a token no station has
   * (replaced, or its station deleted) is absent. Not scoped by organization: the hashes are what
   * the links know. Links opening at once look their tokens up together, in one query for all
   * that wait.
   */
  stationsByTokenHashes(hashes: Buffer[]): Promise<Map<string, HeldStation>>;
}

/** @param committed takes the outbox rows of every link opened or closed once committed. */
export function createLinkPresence(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed,
): LinkPresence {
  /**
   * Records links opened together in one transaction: one read of the stations their tokens name
   * with those stations' printers, and one statement for the stations' rows, every printer
   * reported and the outbox rows. A token no station has, or a revoked one, opens nothing and is
   * answered undefined. A token that opened twice in the group has its later open committed after
   * the earlier, in a transaction of its own, as they came.
   */
  async function commitOpens(group: LinkOpen[]): Promise<Outcome<OpenedLink | undefined>[]> {
    const outcomes = new Map<LinkOpen, Outcome<OpenedLink | undefined>>();
    let left = group;
    while (left.length > 0) {
      const seen = new Set<string>();
      const first: LinkOpen[] = [];
      const later: LinkOpen[] = [];
      for (const open of left) {
        const key = open.tokenHash.toString('hex');
        if (seen.has(key)) later.push(open);
        else {
          seen.add(key);
          first.push(open);
        }
      }
      const { opened, outbox } = await withTx(pool, async (tx) => {
        const at = clock.now();
        const { rows } = await tx.query<LinkStationRow>(
          `SELECT s.id AS station_id, s.name AS station_name, s.org_id, s.region, s.location_id,
             s.revoked_at, s.token_hash, s.online AS station_online,
             p.id, p.name, p.status, p.detail, p.capabilities
           FROM stations s LEFT JOIN printers p ON p.org_id = s.org_id AND p.station_id = s.id
           WHERE s.token_hash = ANY($1::BYTEA[])`,
          [first.map((o) => o.tokenHash)],
        );
        const byToken = new Map(
          rows.map((r) => [
            r.token_hash.toString('hex'),
            toLinkStation(r.station_id, r.station_name, r),
          ]),
        );
        const printers = groupBy(
          rows.filter((r): r is LinkStationRow & PrinterState => r.id !== null),
          (r) => r.station_id,
        );
        // Each open with its station, found once; an unknown or revoked token opens nothing.
        const valid = first.flatMap((open) => {
          const station = byToken.get(open.tokenHash.toString('hex'));
          return station && !station.revoked ? [{ open, station }] : [];
        });
        const opened = new Map<LinkOpen, OpenedLink>();
        if (valid.length === 0) return { opened, outbox: [] };
        const batch = new WriteBatch();
        const stations = columns(valid, ({ open, station }) => [
          station.orgId,
          station.id,
          open.linkId,
          open.agentVersion.slice(0, 100),
          cleanText(open.platform, 32),
        ]);
        batch.add(
          `UPDATE stations SET online = true, link_id = v.link_id, last_seen_at = ${batch.param(at)},
             agent_version = v.agent_version, platform = v.platform
           FROM (${batch.rows(stations, ['UUID', 'UUID', 'TEXT', 'TEXT', 'TEXT'])})
             AS v (org_id, id, link_id, agent_version, platform)
           WHERE stations.org_id = v.org_id AND stations.id = v.id`,
        );
        // A link that replaces another (the agent reconnected before its old link was seen to
        // end) leaves the station online: `station.online` is for a station that was offline.
        const wasOnline = new Set(rows.filter((r) => r.station_online).map((r) => r.station_id));
        const messages: OutboxMessage[] = valid
          .filter(({ station }) => !wasOnline.has(station.id))
          .map(({ open, station }) => ({
            ...eventMessage(station.orgId, 'station.online', { station_id: station.id }, at),
            headers: open.trace as Record<string, string>,
          }));
        const locations = new Map(rows.map((r) => [r.station_id, r.location_id]));
        const ids = await syncPrinters(
          tx,
          batch,
          valid.map(({ open, station }) => ({
            station,
            reports: open.printers,
            trace: open.trace,
            // Online once this batch is written.
            place: {
              locationId: locations.get(station.id) ?? null,
              region: station.region,
              online: true,
            },
          })),
          at,
          messages,
          printers,
        );
        const outbox = addToOutbox(batch, OUTBOX_TABLE, messages);
        await queryThenCommit(tx, batch.text(), batch.values);
        valid.forEach(({ open, station }, i) => {
          opened.set(open, { station, printerIds: ids[i] ?? {} });
        });
        return { opened, outbox };
      });
      committed(outbox);
      for (const o of first) outcomes.set(o, { ok: opened.get(o) });
      left = later;
    }
    return group.map((o) => outcomes.get(o) as Outcome<OpenedLink | undefined>);
  }
  const opens = new GroupCommit(commitOpens, MAX_OPENS);

  /** A station's link, as a key. */
  const linkKey = (stationId: string, linkId: string) => `${stationId}/${linkId}`;

  /**
   * Records the stations of `links` online (or offline) in one transaction, each only while the
   * link is still its current one and it reads the other way, and queues `station.online` (or
   * `station.offline`) for each that changed; answers their links (`linkKey`). A link that was no
   * longer its station's current one (the agent reconnected meanwhile) changes nothing, and
   * neither does one recorded so already (two replicas closing a lost replica's links).
   */
  async function recordLinks(
    links: readonly OpenLink[],
    online: boolean,
    alive: readonly string[] = [],
  ): Promise<Set<string>> {
    const { changed, outbox } = await withTx(pool, async (tx) => {
      const now = clock.now();
      if (alive.length > 0) {
        await tx.query(
          `INSERT INTO station_replicas (id, seen_at) SELECT r, $2 FROM unnest($1::TEXT[]) AS r
           ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`,
          [alive, now],
        );
      }
      const { rows } = await tx.query<{ id: string; org_id: string; link_id: string }>(
        `UPDATE stations SET online = $5, last_seen_at = $4
         FROM unnest($1::UUID[], $2::UUID[], $3::TEXT[]) AS v (org_id, id, link_id)
         WHERE stations.org_id = v.org_id AND stations.id = v.id
           AND stations.link_id = v.link_id AND stations.online <> $5
         RETURNING stations.id, stations.org_id, stations.link_id`,
        [
          links.map((l) => l.station.orgId),
          links.map((l) => l.station.id),
          links.map((l) => l.linkId),
          now,
          online,
        ],
      );
      const type = online ? 'station.online' : 'station.offline';
      const batch = new WriteBatch();
      const outbox = addToOutbox(
        batch,
        OUTBOX_TABLE,
        rows.map((r) => eventMessage(r.org_id, type, { station_id: r.id }, now)),
      );
      if (outbox.length > 0) await queryThenCommit(tx, batch.text(), batch.values);
      return { changed: new Set(rows.map((r) => linkKey(r.id, r.link_id))), outbox };
    });
    committed(outbox);
    return changed;
  }

  /**
   * Links closed together go offline in one transaction ({@link recordLinks}). A link closed twice
   * in one group (two replicas sweeping the same lost link) took its station offline once: only
   * the first close says so.
   */
  async function commitCloses(group: OpenLink[]): Promise<Outcome<boolean>[]> {
    const offline = await recordLinks(group, false);
    return group.map((c) => ({ ok: offline.delete(linkKey(c.station.id, c.linkId)) }));
  }
  const closes = new GroupCommit(commitCloses, MAX_OPENS);

  return {
    linkOpened(tokenHash, linkId, printers, agent = {}) {
      return opens.submit({
        tokenHash,
        linkId,
        printers,
        agentVersion: agent.version ?? '',
        platform: agent.platform ?? '',
        trace: traceCarrier(),
      });
    },

    linkClosed(station, linkId) {
      return closes.submit({ station, linkId });
    },

    async linksStillOpen(links) {
      if (links.length === 0) return 0;
      // The replica holding them says it is alive in the same transaction, so that no other
      // replica takes them for lost again before its next beat.
      const replicas = [
        ...new Set(links.flatMap((l) => (l.linkId.includes(':') ? [l.linkId.split(':')[0]] : []))),
      ] as string[];
      return (await recordLinks(links, true, replicas)).size;
    },

    async stationsByTokenHashes(hashes) {
      const found = new Map<string, HeldStation>();
      if (hashes.length === 0) return found;
      const { rows } = await pool.query<StationRow & { token_hash: Buffer }>(
        `SELECT ${STATION_COLUMNS}, token_hash FROM stations WHERE token_hash = ANY($1::BYTEA[])`,
        [hashes],
      );
      for (const row of rows) {
        found.set(row.token_hash.toString('hex'), {
          ...toLinkStation(row.id, row.name, row),
          online: row.online,
          linkId: row.link_id,
        });
      }
      return found;
    },
  };
}
