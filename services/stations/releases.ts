/**
 * Agent releases and rollouts (DESIGN "Agent releases"): signed manifests stored byte for byte,
 * rollouts targeting a stable share of the stations at a version, the stations' update reports,
 * and the rollouts that stop themselves when too many of their stations fail to update.
 *
 * A station's bucket is the first 4 bytes of SHA-256(station id) as a big-endian uint32, mod 100;
 * a rollout covers it when the organization matches (or the rollout names none) and the bucket is
 * below the rollout's percent. A station's target is the version of the newest covering rollout
 * not stopped; none: no target. A rollout that stopped halts rather than takes back: a station
 * that runs its version, with no newer rollout covering it, keeps it (no target).
 */
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type {
  Release,
  ReleaseStation,
  ReleaseSummary,
  Rollout,
  UpdateStatus,
} from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import {
  isReleaseVersion,
  ManifestError,
  parseReleaseManifest,
  SIGNATURE_BYTES,
} from '../../lib/contracts/release-manifest.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { cleanText } from './agent-input.js';

/** Core NATS: rollouts were created or stopped; every replica recomputes its links' targets. */
export const RELEASES_CHANGED = 'spool.releases.changed';

/** The update states an agent reports. */
export const UPDATE_STATES = ['current', 'downloading', 'failed', 'rolled_back'] as const;
export const MAX_UPDATE_DETAIL = 500;
export const MAX_UPDATE_VERSION = 64;
/** Stations listed per release (its counts are exact). */
export const STATIONS_PER_RELEASE = 500;

/** The station's stable bucket, 0 to 99 (stored with the station as `rollout_bucket`). */
export function stationBucket(stationId: string): number {
  return createHash('sha256').update(stationId).digest().readUInt32BE(0) % 100;
}

/** What decides whether a rollout covers a station: its organization and its bucket. */
export interface RolloutKey {
  orgId: string;
  bucket: number;
}

export function rolloutKey(station: StationKey): RolloutKey {
  return { orgId: station.orgId, bucket: stationBucket(station.id) };
}

/** Stations alike for rollouts, counted: `n` of an organization, bucket and agent version. */
interface StationGroup extends RolloutKey {
  agentVersion: string;
  n: number;
}

export interface RolloutRow {
  id: string;
  version: string;
  percent: number;
  org_id: string | null;
  max_failures: number;
  created_at: Date;
  stopped_at: Date | null;
  stopped_reason: string;
}

interface ReleaseRow {
  version: string;
  manifest: Buffer;
  signature: Buffer;
  platforms: string[];
  published_at: Date;
}

export function covers(rollout: Pick<RolloutRow, 'org_id' | 'percent'>, station: RolloutKey) {
  return (
    (rollout.org_id === null || rollout.org_id === station.orgId) &&
    station.bucket < rollout.percent
  );
}

export interface StationKey {
  id: string;
  orgId: string;
}

/**
 * The rollouts newest first, stopped ones too, and the releases the active ones name: what
 * targets are computed from.
 */
export interface ReleaseSnapshot {
  rollouts: RolloutRow[];
  releases: Map<string, ReleaseRow>;
}

/**
 * The station's target: the release of the newest covering rollout not stopped; none when a
 * newer covering rollout stopped and the station runs its version (`running`, as its agent says):
 * a stopped rollout offers no way back to those that took it. Rolling the older version out
 * again, a newer rollout, does.
 */
export function targetOf(
  snapshot: ReleaseSnapshot,
  station: RolloutKey,
  running: string,
): ReleaseRow | undefined {
  for (const rollout of snapshot.rollouts) {
    if (!covers(rollout, station)) continue;
    if (rollout.stopped_at === null) return snapshot.releases.get(rollout.version);
    if (rollout.version === running) return undefined;
  }
  return undefined;
}

function toRelease(row: ReleaseRow): Release {
  return {
    version: row.version,
    manifest: row.manifest,
    signature: row.signature,
    publishedAt: row.published_at,
    platforms: row.platforms,
  };
}

function toRollout(row: RolloutRow): Rollout {
  return {
    id: row.id,
    version: row.version,
    percent: row.percent,
    orgId: row.org_id ?? '',
    maxFailures: row.max_failures,
    createdAt: row.created_at,
    stoppedAt: row.stopped_at ?? undefined,
    stoppedReason: row.stopped_reason,
  };
}

const ROLLOUT_COLUMNS =
  'id, version, percent, org_id, max_failures, created_at, stopped_at, stopped_reason';

/** An update report as it can be stored: state known, version and detail bounded. */
export function checkUpdate(update: UpdateStatus): UpdateStatus | undefined {
  if (!(UPDATE_STATES as readonly string[]).includes(update.state)) return undefined;
  if (update.version.length > MAX_UPDATE_VERSION || /\p{Cc}/u.test(update.version)) {
    return undefined;
  }
  return {
    state: update.state,
    version: update.version,
    detail: cleanText(update.detail, MAX_UPDATE_DETAIL),
  };
}

export interface ReleasesOptions {
  pool: pg.Pool;
  nc: NatsConnection;
  clock: Clock;
}

export class Releases {
  readonly #pool: pg.Pool;
  readonly #nc: NatsConnection;
  readonly #clock: Clock;

  constructor(options: ReleasesOptions) {
    this.#pool = options.pool;
    this.#nc = options.nc;
    this.#clock = options.clock;
  }

  #changed(): void {
    this.#nc.publish(RELEASES_CHANGED);
  }

  async publish(manifest: Uint8Array, signature: Uint8Array): Promise<Release> {
    let parsed: ReturnType<typeof parseReleaseManifest>;
    try {
      parsed = parseReleaseManifest(manifest);
    } catch (err) {
      if (err instanceof ManifestError) throw invalid(err.message, 'manifest');
      throw err;
    }
    if (signature.length !== SIGNATURE_BYTES) {
      throw invalid(
        `the signature must be ${SIGNATURE_BYTES} bytes (raw Ed25519); it is ${signature.length}`,
        'signature',
      );
    }
    const platforms = Object.keys(parsed.platforms).sort();
    const bytes = Buffer.from(manifest);
    const sig = Buffer.from(signature);
    const { rows } = await this.#pool.query<ReleaseRow>(
      `INSERT INTO releases (version, manifest, signature, platforms, published_at)
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT (version) DO NOTHING
       RETURNING version, manifest, signature, platforms, published_at`,
      [parsed.version, bytes, sig, JSON.stringify(platforms), this.#clock.now()],
    );
    if (rows[0]) return toRelease(rows[0]);
    const existing = await this.#release(parsed.version);
    if (existing?.manifest.equals(bytes) && existing.signature.equals(sig)) {
      return toRelease(existing);
    }
    throw conflict(
      `release ${parsed.version} was published before with other bytes; publish a new version`,
      'manifest',
    );
  }

  async #release(version: string): Promise<ReleaseRow | undefined> {
    const { rows } = await this.#pool.query<ReleaseRow>(
      'SELECT version, manifest, signature, platforms, published_at FROM releases WHERE version = $1',
      [version],
    );
    return rows[0];
  }

  /** The release of `version`, or not_found. */
  async get(version: string): Promise<Release> {
    const row = isReleaseVersion(version) ? await this.#release(version) : undefined;
    if (!row) throw notFound(`no release ${version}`);
    return toRelease(row);
  }

  async createRollout(req: {
    version: string;
    percent: number;
    orgId: string;
    maxFailures: number;
  }): Promise<Rollout> {
    if (!Number.isInteger(req.percent) || req.percent < 1 || req.percent > 100) {
      throw invalid('percent must be 1 to 100', 'percent');
    }
    if (req.orgId !== '' && !isUuid(req.orgId)) throw invalid('org_id is not an id', 'org_id');
    if (req.maxFailures > 1_000_000) throw invalid('max_failures is too large', 'max_failures');
    if (!isReleaseVersion(req.version) || !(await this.#release(req.version))) {
      throw notFound(`no release ${req.version}: publish it first`);
    }
    const orgId = req.orgId === '' ? null : req.orgId;
    let maxFailures = req.maxFailures;
    if (maxFailures === 0) {
      const rollout = { org_id: orgId, percent: req.percent };
      maxFailures = defaultMaxFailures(await this.#covered(rollout));
    }
    // Newest is what decides a target: a rollout is created after every other, even in the same
    // instant (or on a clock that stands still).
    const { rows } = await this.#pool.query<RolloutRow>(
      `INSERT INTO rollouts (id, version, percent, org_id, max_failures, created_at)
       SELECT $1, $2, $3, $4, $5, GREATEST($6::TIMESTAMPTZ,
         COALESCE((SELECT max(created_at) FROM rollouts), $6::TIMESTAMPTZ) + INTERVAL '1 microsecond')
       RETURNING ${ROLLOUT_COLUMNS}`,
      [randomUUID(), req.version, req.percent, orgId, maxFailures, this.#clock.now()],
    );
    this.#changed();
    return toRollout(rows[0] as RolloutRow);
  }

  /** Every rollout, newest first, and the releases of the active ones. */
  async snapshot(): Promise<ReleaseSnapshot> {
    const { rows: rollouts } = await this.#pool.query<RolloutRow>(
      `SELECT ${ROLLOUT_COLUMNS} FROM rollouts ORDER BY created_at DESC, id DESC`,
    );
    const versions = [
      ...new Set(rollouts.filter((r) => r.stopped_at === null).map((r) => r.version)),
    ];
    const { rows } = await this.#pool.query<ReleaseRow>(
      `SELECT version, manifest, signature, platforms, published_at FROM releases
       WHERE version = ANY($1::TEXT[])`,
      [versions],
    );
    return { rollouts, releases: new Map(rows.map((r) => [r.version, r])) };
  }

  /**
   * Stores the station's update report, when it sent one it may send, and stops the rollout it
   * failed on when its failures reached the rollout's limit. Most hellos carry none, and cost
   * nothing here.
   */
  async recordUpdate(station: StationKey, sent: UpdateStatus | undefined): Promise<void> {
    const update = sent && checkUpdate(sent);
    if (!update) return;
    await this.#pool.query(
      `UPDATE stations SET update_state = $3, update_version = $4, update_detail = $5, update_at = $6
       WHERE id = $1 AND org_id = $2`,
      [station.id, station.orgId, update.state, update.version, update.detail, this.#clock.now()],
    );
    if (update.state === 'failed' || update.state === 'rolled_back') {
      await this.#stopIfFailing(update.version, update.detail);
    }
  }

  /**
   * Counts the stations the newest active rollout of `version` covers that failed on it; at its
   * limit, stops it (one conditional statement: any replica may, the first does).
   */
  async #stopIfFailing(version: string, detail: string): Promise<void> {
    const { rows: active } = await this.#pool.query<RolloutRow>(
      `SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE version = $1 AND stopped_at IS NULL
       ORDER BY created_at DESC, id DESC LIMIT 1`,
      [version],
    );
    const rollout = active[0];
    if (!rollout) return;
    const failed = await this.#covered(rollout, version);
    if (failed < rollout.max_failures) return;
    const coveredCount = await this.#covered(rollout);
    const reason = cleanText(
      `${failed} of ${coveredCount} stations failed to update; last: ${detail || 'no detail'}`,
      1000,
    );
    const stopped = await this.#pool.query(
      `UPDATE rollouts SET stopped_at = $2, stopped_reason = $3
       WHERE id = $1 AND stopped_at IS NULL AND max_failures <= $4`,
      [rollout.id, this.#clock.now(), reason, failed],
    );
    if ((stopped.rowCount ?? 0) > 0) this.#changed();
  }

  /**
   * The stations `rollout` covers; with `failedOn`, only those whose last update report is a
   * failure or a roll-back of that version.
   */
  async #covered(
    rollout: Pick<RolloutRow, 'org_id' | 'percent'>,
    failedOn?: string,
  ): Promise<number> {
    let n = 0;
    for (const group of await this.#groups(rollout.org_id, failedOn)) {
      if (covers(rollout, group)) n += group.n;
    }
    return n;
  }

  /**
   * The stations of `orgId` (every organization's when null), counted by bucket and agent
   * version, in SQL; a station whose bucket is not stored yet (made before it was, and not
   * filled in yet: {@link fillRolloutBuckets}) comes alone, its bucket computed here.
   */
  async #groups(orgId: string | null, failedOn?: string): Promise<StationGroup[]> {
    const params: unknown[] = [];
    const where: string[] = [];
    if (orgId !== null) where.push(`org_id = $${params.push(orgId)}`);
    if (failedOn !== undefined) {
      where.push(`update_version = $${params.push(failedOn)}`);
      where.push(`update_state IN ('failed', 'rolled_back')`);
    }
    const and = where.map((w) => ` AND ${w}`).join('');
    const { rows } = await this.#pool.query<{
      org_id: string;
      bucket: number | null;
      id: string | null;
      agent_version: string;
      n: string;
    }>(
      `SELECT org_id, rollout_bucket AS bucket, NULL AS id, agent_version, count(*) AS n
         FROM stations WHERE rollout_bucket IS NOT NULL${and}
         GROUP BY org_id, rollout_bucket, agent_version
       UNION ALL
       SELECT org_id, NULL, id::TEXT, agent_version, 1 FROM stations
         WHERE rollout_bucket IS NULL${and}`,
      params,
    );
    return rows.map((r) => ({
      orgId: r.org_id,
      bucket: r.bucket ?? stationBucket(r.id as string),
      agentVersion: r.agent_version,
      n: Number(r.n),
    }));
  }

  /** Every release, newest first, with its rollouts, counts and stations. */
  async list(): Promise<ReleaseSummary[]> {
    const { rows: releases } = await this.#pool.query<ReleaseRow>(
      `SELECT version, manifest, signature, platforms, published_at FROM releases
       ORDER BY published_at DESC, version DESC LIMIT 200`,
    );
    if (releases.length === 0) return [];
    const versions = releases.map((r) => r.version);
    const { rows: rollouts } = await this.#pool.query<RolloutRow>(
      `SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE version = ANY($1::TEXT[])
       ORDER BY created_at DESC, id DESC`,
      [versions],
    );
    const { rows: counted } = await this.#pool.query<{
      version: string;
      state: string;
      n: string;
    }>(
      `SELECT agent_version AS version, 'running' AS state, count(*) AS n FROM stations
         WHERE agent_version = ANY($1::TEXT[]) GROUP BY agent_version
       UNION ALL
       SELECT update_version AS version, update_state AS state, count(*) AS n FROM stations
         WHERE update_version = ANY($1::TEXT[]) AND update_state IN ('downloading', 'failed', 'rolled_back')
         GROUP BY update_version, update_state`,
      [versions],
    );
    type Listed = ReleaseStation & { version: string };
    const stations = new Map<string, Listed[]>();
    for (const version of versions) {
      const { rows } = await this.#pool.query<{
        id: string;
        org_id: string;
        name: string;
        agent_version: string;
        update_state: string;
        update_version: string;
        update_detail: string;
        online: boolean;
      }>(
        `SELECT id, org_id, name, agent_version, update_state, update_version, update_detail, online
         FROM stations WHERE agent_version = $1 OR update_version = $1
         ORDER BY org_id, id LIMIT ${STATIONS_PER_RELEASE}`,
        [version],
      );
      stations.set(
        version,
        rows.map((r) => ({
          version,
          stationId: r.id,
          orgId: r.org_id,
          name: r.name,
          agentVersion: r.agent_version,
          updateState: r.update_state,
          updateVersion: r.update_version,
          updateDetail: r.update_detail,
          online: r.online,
        })),
      );
    }
    // Targeted: stations whose target is the version now.
    const targeted = new Map<string, number>();
    if (rollouts.some((r) => r.stopped_at === null)) {
      const snapshot: ReleaseSnapshot = {
        rollouts,
        releases: new Map(releases.map((r) => [r.version, r])),
      };
      for (const group of await this.#groups(null)) {
        const target = targetOf(snapshot, group, group.agentVersion);
        if (target) targeted.set(target.version, (targeted.get(target.version) ?? 0) + group.n);
      }
    }
    return releases.map((release) => {
      const counts: Record<string, number> = {
        running: 0,
        downloading: 0,
        failed: 0,
        rolled_back: 0,
        targeted: targeted.get(release.version) ?? 0,
      };
      for (const c of counted) if (c.version === release.version) counts[c.state] = Number(c.n);
      return {
        release: toRelease(release),
        rollouts: rollouts.filter((r) => r.version === release.version).map(toRollout),
        stations: (stations.get(release.version) ?? []).map(({ version: _v, ...s }) => s),
        counts,
      };
    });
  }
}

/** The default stop threshold: 5 % of the stations a rollout covers when created, at least 1. */
export function defaultMaxFailures(covered: number): number {
  return Math.max(1, Math.ceil(covered * 0.05));
}

/**
 * Stores the bucket of every station made before `rollout_bucket` was (migration 009), a batch at
 * a time; answers how many it filled. Every stations replica runs it at start: the statements are
 * idempotent, and until it is done rollouts hash the stations still without one.
 */
export async function fillRolloutBuckets(pool: pg.Pool, batch = 1_000): Promise<number> {
  let filled = 0;
  for (;;) {
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM stations WHERE rollout_bucket IS NULL LIMIT ${batch}`,
    );
    if (rows.length === 0) return filled;
    const ids = rows.map((r) => r.id);
    const result = await pool.query(
      `UPDATE stations AS s SET rollout_bucket = v.bucket
       FROM unnest($1::UUID[], $2::INT[]) AS v(id, bucket)
       WHERE s.id = v.id AND s.rollout_bucket IS NULL`,
      [ids, ids.map(stationBucket)],
    );
    filled += result.rowCount ?? 0;
    if (rows.length < batch) return filled;
  }
}
