/**
 * Offers of agent releases over the links (DESIGN "Agent releases"): each link's station is offered
 * its target version once its agent, on a platform the target's release is built for, runs another
 * one. Every replica keeps the active rollouts in memory and reads them again when any replica says
 * they changed (`spool.releases.changed`), then offers each of its links whose target changed.
 */
import type { ServerMessage } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { Logger } from '../../lib/logger.js';
import {
  RELEASES_CHANGED,
  type ReleaseSnapshot,
  type Releases,
  type RolloutKey,
  rolloutKey,
  type StationKey,
  targetOf,
} from './releases.js';

/** How often the rollouts are read again without being told they changed. */
const REREAD_MS = 60_000;

/** One link as its offers of releases see it. */
export interface UpdatableLink {
  station: StationKey;
  platform: string;
  agentVersion: string;
  send(msg: ServerMessage): Promise<void>;
  /** The version last offered on this link, never offered twice. */
  offered?: string;
  /** The station's organization and bucket, computed at its first offer. */
  rolloutKey?: RolloutKey;
}

export class ReleaseWatch {
  readonly #releases: Releases;
  readonly #nc: NatsConnection;
  readonly #logger: Logger;
  /** `<gateway>/agent/v1/releases`, asked when an offer is made (the gateway may start later). */
  readonly #downloadUrl: () => string;
  readonly #links = new Set<UpdatableLink>();
  #snapshot: Promise<ReleaseSnapshot> | undefined;
  #sub: { unsubscribe(): void } | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: {
    releases: Releases;
    nc: NatsConnection;
    logger: Logger;
    downloadUrl: string | (() => string);
  }) {
    this.#releases = options.releases;
    this.#nc = options.nc;
    this.#logger = options.logger;
    const { downloadUrl } = options;
    this.#downloadUrl = typeof downloadUrl === 'string' ? () => downloadUrl : downloadUrl;
  }

  get releases(): Releases {
    return this.#releases;
  }

  start(): void {
    const reread = () => {
      this.#snapshot = undefined;
      void this.#offerAll();
    };
    this.#sub = this.#nc.subscribe(RELEASES_CHANGED, { callback: reread });
    // A change missed while NATS was away is found within a minute.
    this.#timer = setInterval(reread, REREAD_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#sub?.unsubscribe();
    this.#links.clear();
  }

  #current(): Promise<ReleaseSnapshot> {
    if (!this.#snapshot) {
      const loading = this.#releases.snapshot();
      this.#snapshot = loading;
      loading.catch(() => {
        if (this.#snapshot === loading) this.#snapshot = undefined;
      });
    }
    return this.#snapshot;
  }

  /** Watches `link` until {@link forget}, offering its target now if it has one to take. */
  async linked(link: UpdatableLink): Promise<void> {
    this.#links.add(link);
    await this.#offer(link);
  }

  forget(link: UpdatableLink): void {
    this.#links.delete(link);
  }

  async #offerAll(): Promise<void> {
    for (const link of this.#links) await this.#offer(link);
  }

  async #offer(link: UpdatableLink): Promise<void> {
    if (link.platform === '') return;
    let snapshot: ReleaseSnapshot;
    try {
      snapshot = await this.#current();
    } catch (err) {
      this.#logger.warn({ err }, 'could not read the rollouts; offers wait for the next change');
      return;
    }
    link.rolloutKey ??= rolloutKey(link.station);
    const target = targetOf(snapshot, link.rolloutKey, link.agentVersion);
    if (!target?.platforms.includes(link.platform)) return;
    if (target.version === link.agentVersion || target.version === link.offered) return;
    link.offered = target.version;
    this.#logger.info(
      { station_id: link.station.id, version: target.version, running: link.agentVersion },
      'agent release offered',
    );
    // Queued behind the link's other writes; a link that cannot take it now holds no other up.
    void link.send({
      update: {
        version: target.version,
        manifest: target.manifest,
        signature: target.signature,
        downloadBase: `${this.#downloadUrl().replace(/\/+$/, '')}/${target.version}/`,
      },
    });
  }
}
