/**
 * The audit log (docs/audit.md): one entry per operator or console action, who did what to which
 * resource, when and from where. The gateway records an entry before the action runs and records
 * its outcome after; both writes go to the same row, so an entry whose status is still 0 is an
 * action whose answer was never recorded. Entries hold no secrets: the gateway sends no bodies
 * and no credentials, and this service bounds every field.
 */
import type pg from 'pg';
import type { AccountsServiceServer, AuditEntry } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { invalid } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { isUuid } from '../../lib/ids.js';
import { decodeCursor, page, pageLimit } from '../../lib/paging.js';
import { camelRow } from '../../lib/rows.js';

interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  session_id: string;
  org_id: string;
  method: string;
  route: string;
  target: Record<string, string>;
  status: number;
  ip: string;
  user_agent: string;
  request_id: string;
}

const COLUMNS =
  'id, at, actor, session_id, org_id, method, route, target, status, ip, user_agent, request_id';

/** Every column is a field of the entry, renamed. */
const toEntry = (row: AuditRow): AuditEntry => camelRow(row);

const clip = (value: string, max: number) => value.slice(0, max);

/** Filters of a listing: one organization and/or one actor when not empty, a time range. */
export interface AuditFilters {
  orgId: string;
  actor: string;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface AuditStore {
  /**
   * Writes an entry, or the outcome of one already written: a second write with the same id keeps
   * the first's time and fills in what the first did not know.
   */
  record(e: AuditEntry): Promise<AuditEntry>;
  /**
   * Whether `orgId` names an organization (or one the operator deleted, whose entries stay) and
   * `personId` a person; an empty one is not asked (and answers true).
   */
  known(orgId: string, personId: string): Promise<{ org: boolean; person: boolean }>;
  /**
   * A page of entries newest first, of one organization and/or one actor when given, at or after
   * `since` and before `until` when given.
   */
  list(
    filters: AuditFilters,
    limit: number,
    cursor: string,
  ): Promise<{ items: AuditEntry[]; nextCursor: string }>;
}

export function createAuditStore(pool: pg.Pool, clock: Clock): AuditStore {
  return {
    async record(e) {
      const { rows } = await pool.query<AuditRow>(
        `INSERT INTO audit_log (${COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (id) DO UPDATE SET
           actor = CASE WHEN excluded.actor = '' THEN audit_log.actor ELSE excluded.actor END,
           session_id = CASE WHEN excluded.session_id = '' THEN audit_log.session_id
                             ELSE excluded.session_id END,
           org_id = CASE WHEN excluded.org_id = '' THEN audit_log.org_id ELSE excluded.org_id END,
           route = CASE WHEN excluded.route = '' THEN audit_log.route ELSE excluded.route END,
           target = excluded.target,
           status = excluded.status
         RETURNING ${COLUMNS}`,
        [
          e.id,
          clock.now(),
          clip(e.actor, 200),
          clip(e.sessionId, 100),
          clip(e.orgId, 100),
          clip(e.method, 10),
          clip(e.route, 300),
          JSON.stringify(
            Object.fromEntries(
              Object.entries(e.target)
                .slice(0, 10)
                .map(([k, v]) => [clip(k, 50), clip(v, 100)]),
            ),
          ),
          e.status,
          clip(e.ip, 100),
          clip(e.userAgent, 300),
          clip(e.requestId, 100),
        ],
      );
      return toEntry(rows[0] as AuditRow);
    },

    async known(orgId, personId) {
      const { rows } = await pool.query<{ org: boolean; person: boolean }>(
        // By key: the ids were checked to be UUIDs, and an empty one is not asked.
        `SELECT ($1::TEXT = ''
             OR EXISTS (SELECT 1 FROM orgs WHERE id = NULLIF($1, '')::UUID)
             OR EXISTS (SELECT 1 FROM deleted_orgs WHERE id = NULLIF($1, '')::UUID)) AS org,
           ($2::TEXT = '' OR EXISTS (SELECT 1 FROM people WHERE id = NULLIF($2, '')::UUID))
             AS person`,
        [orgId, personId],
      );
      return rows[0] as { org: boolean; person: boolean };
    },

    async list(filters, limit, cursor) {
      const after = decodeCursor(cursor);
      const { rows } = await pool.query<AuditRow>(
        `SELECT ${COLUMNS} FROM audit_log
         WHERE ($1::TEXT = '' OR org_id = $1) AND ($2::TEXT = '' OR actor = $2)
           AND ($3::TIMESTAMPTZ IS NULL OR (at, id) < ($3, $4::UUID))
           AND ($6::TIMESTAMPTZ IS NULL OR at >= $6) AND ($7::TIMESTAMPTZ IS NULL OR at < $7)
         ORDER BY at DESC, id DESC LIMIT $5`,
        [
          filters.orgId,
          filters.actor,
          after?.at ?? null,
          after?.id ?? null,
          limit + 1,
          filters.since ?? null,
          filters.until ?? null,
        ],
      );
      const { items, nextCursor } = page(rows, limit, (r) => ({
        at: r.at.toISOString(),
        id: r.id,
      }));
      return { items: items.map(toEntry), nextCursor };
    },
  };
}

export type AuditRpcs = Pick<AsyncServer<AccountsServiceServer>, 'recordAudit' | 'listAudit'>;

export function createAuditServer(store: AuditStore): AuditRpcs {
  return {
    async recordAudit(req) {
      const entry = req.entry;
      if (!entry || !isUuid(entry.id)) throw invalid('entry.id must be an id', 'entry.id');
      if (entry.method === '') throw invalid('entry.method is required', 'entry.method');
      return { entry: await store.record(entry) };
    },

    async listAudit(req) {
      // A mistyped filter is refused rather than answered with an empty page, which would read
      // as "nothing happened".
      if (req.orgId !== '' && !isUuid(req.orgId)) {
        throw invalid('org must be the id of an organization', 'org');
      }
      const person = req.actor.startsWith('person:') ? req.actor.slice('person:'.length) : '';
      if (req.actor !== '' && req.actor !== 'operator' && !isUuid(person)) {
        throw invalid('actor must be operator or person:<id of a person>', 'actor');
      }
      const known = await store.known(req.orgId.toLowerCase(), person.toLowerCase());
      if (!known.org) throw invalid('org names no organization', 'org');
      if (!known.person) throw invalid('actor names no person', 'actor');
      return store.list(
        {
          orgId: req.orgId.toLowerCase(),
          actor: req.actor.toLowerCase(),
          since: req.since,
          until: req.until,
        },
        pageLimit(req.limit),
        req.cursor,
      );
    },
  };
}
