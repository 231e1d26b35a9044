/**
 * One agent's link, from its hello to its end: authenticates the device token, records the link,
 * takes the agent's messages in turn and records the link's end. What it offers the agent is
 * {@link LinkedStation}.
 */
import { randomUUID } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { AgentHello, AgentMessage } from '../../gen/spool/v1/stations.js';
import { credentialKind, hashCredential } from '../../lib/credentials.js';
import type { Logger } from '../../lib/logger.js';
import { AgentInputError, checkHello } from './agent-input.js';
import type { Call, JobAttempt, LinkDeps } from './link-deps.js';
import { AgentOutbound } from './link-outbound.js';
import type { RereadLink, Rereads } from './link-rereads.js';
import { ResyncRetry } from './link-resync-retry.js';
import type { LinkStation } from './link-station.js';
import { ENDS, LinkedStation } from './linked-station.js';

/** How long an agent has to say hello after connecting. */
const HELLO_TIMEOUT_MS = 10_000;

/**
 * When a link outside its station's home region asks for its pending jobs once more. Its
 * subscription reaches the home region's NATS over the gateway between the two clusters a moment
 * after the local server has it, and an offer published there meanwhile reaches nobody: this
 * second read finds the jobs created in that moment, where the minute re-read would find them up
 * to a minute later.
 */
export const AWAY_REREAD_MS = 2_000;

function bearerToken(call: Call): string | undefined {
  const value = call.metadata.get('authorization')[0];
  if (typeof value !== 'string') return undefined;
  return /^Bearer\s+(\S+)$/i.exec(value)?.[1];
}

export class LinkSession implements RereadLink {
  readonly #call: Call;
  readonly #deps: LinkDeps;
  readonly #rereads: Rereads;
  readonly #onClosed: () => void;
  readonly #linkId: string;
  readonly #logger: Logger;
  readonly #outbound: AgentOutbound;
  readonly #retry = new ResyncRetry(() => void this.resync());
  /** The link's station and what it offers and reports, from its hello on. */
  #linked: LinkedStation | undefined;
  /** Incoming messages, handled one at a time in arrival order. */
  #in: Promise<void> = Promise.resolve();
  #closed = false;
  #opened = false;
  #tokenHash: Buffer | undefined;
  /** Why the link ended, for its log line: what {@link close} said, or the connection's loss. */
  #closeReason = 'the agent went away: its connection closed or was lost';
  /** When the station was linked (`performance.now()`), for how long it stayed. */
  #linkedAt: number | undefined;

  constructor(call: Call, deps: LinkDeps, rereads: Rereads, onClosed: () => void) {
    this.#call = call;
    this.#deps = deps;
    this.#linkId = deps.newLinkId?.() ?? randomUUID();
    this.#rereads = rereads;
    this.#onClosed = onClosed;
    this.#logger = deps.logger.child({ link: this.#linkId });
    this.#outbound = new AgentOutbound(call, () => this.#closed);
    call.on('error', () => this.#cleanup());
    call.on('cancelled', () => this.#cleanup());
    call.on('close', () => this.#cleanup());
    call.on('end', () => this.close(GrpcStatus.OK, 'goodbye'));
  }

  /**
   * Handles the agent's messages one at a time in arrival order. The device token is looked up
   * when the hello comes, in the transaction that records the link (one round trip fewer per
   * handshake); only a missing or malformed one is refused at once.
   */
  async run(): Promise<void> {
    const token = bearerToken(this.#call);
    if (!token || credentialKind(token) !== 'device') {
      this.#refuse();
      return;
    }
    this.#tokenHash = hashCredential(token);
    const helloTimer = setTimeout(
      () => this.close(GrpcStatus.DEADLINE_EXCEEDED, 'no hello from the agent'),
      HELLO_TIMEOUT_MS,
    );
    this.#call.once('data', () => clearTimeout(helloTimer));
    this.#call.on('data', (msg: AgentMessage) => this.#inTurn(() => this.#handle(msg)));
    this.#call.once('close', () => clearTimeout(helloTimer));
  }

  /** Runs `step` after the steps before it; one that fails closes the link. */
  #inTurn(step: () => Promise<void>): void {
    this.#in = this.#in.then(step).catch((err: unknown) => {
      if (err instanceof AgentInputError) {
        // Sent again on the next link, it would be refused again: the agent must change.
        this.#logger.warn(
          { station_id: this.#linked?.station.id, peer: this.#call.getPeer(), reason: err.message },
          'station link refused: the agent sent what no agent of Spool sends',
        );
        this.close(GrpcStatus.INVALID_ARGUMENT, err.message);
        return;
      }
      this.#logger.warn({ err }, 'station message not handled; closing the link');
      this.close(GrpcStatus.UNAVAILABLE, 'try again');
    });
  }

  #refuse(): void {
    const reason = 'the device token is not valid: unknown or revoked';
    // Never the token: where the agent connected from is what tells an operator which one it is.
    this.#logger.warn({ peer: this.#call.getPeer(), reason }, 'station link refused');
    this.close(GrpcStatus.UNAUTHENTICATED, reason);
  }

  async #handle(msg: AgentMessage): Promise<void> {
    if (this.#closed) return;
    if (!this.#opened) {
      if (!msg.hello) {
        this.close(GrpcStatus.INVALID_ARGUMENT, 'the first message must be hello');
        return;
      }
      this.#opened = true;
      const hello = checkHello(msg.hello);
      await this.#open(hello);
      await this.#linked?.updates(hello);
      return;
    }
    await this.#linked?.handle(msg);
  }

  async #open(hello: AgentHello): Promise<void> {
    const { printers, held } = hello;
    const opened = await this.#deps.store.linkOpened(
      this.#tokenHash as Buffer,
      this.#linkId,
      printers,
      {
        version: hello.agentVersion,
        platform: hello.platform,
      },
    );
    if (!opened) {
      this.#refuse();
      return;
    }
    const { station } = opened;
    const linked = new LinkedStation({
      deps: this.#deps,
      station,
      logger: this.#logger,
      outbound: this.#outbound,
      closed: () => this.#closed,
      inTurn: (step) => this.#inTurn(step),
      resync: () => void this.resync(),
      printers,
      printerIds: opened.printerIds,
      held,
    });
    this.#linked = linked;
    // Closed meanwhile: the link's close was not recorded, having no station yet.
    if (this.#closed) {
      this.#recordClosed(station);
      return;
    }
    linked.watchLinks(this.#linkId, ([code, details]) => this.close(code, details));
    await linked.welcome(this.#linkId);
    this.#linkedAt = performance.now();
    this.#logger.info(
      {
        station_id: station.id,
        org_id: station.orgId,
        agent_version: hello.agentVersion,
        printers: printers.length,
        peer: this.#call.getPeer(),
      },
      'station linked',
    );
    // Subscribe before asking for pending jobs, so nothing falls between the two.
    linked.watchDispatch();
    linked.watchDiagnoses();
    // With the links opening at the same moment: 200 agents reconnecting at once ask in a few
    // batches, not 200 calls. The token was read as the link opened: only the jobs are.
    await this.#rereads.want(this, true);
    if (station.region !== this.#deps.region && !this.#closed && !this.#retry.waiting) {
      this.#retry.after(AWAY_REREAD_MS);
    }
  }

  get linked(): boolean {
    return this.#opened && !this.#closed && this.#tokenHash !== undefined && !!this.#linked;
  }

  get tokenHash(): Buffer {
    return this.#tokenHash as Buffer;
  }

  get linkId(): string {
    return this.#linkId;
  }

  get station(): LinkStation {
    return this.#linked?.station as LinkStation;
  }

  tokenHolds(found: LinkStation | undefined): boolean {
    const station = this.#linked?.station;
    if (!found || found.revoked || found.id !== station?.id) {
      this.close(...ENDS.revoked);
      return false;
    }
    if (found.region !== station.region) {
      this.close(...ENDS.moved);
      return false;
    }
    return true;
  }

  unfinishedNow(): JobAttempt[] {
    return this.#linked?.offers.unfinishedNow() ?? [];
  }

  withdrawUnless(items: Job[], unfinished: JobAttempt[]): void {
    this.#linked?.offers.withdrawUnless(items, unfinished);
  }

  offerJobs(items: Job[]): void {
    this.#linked?.offers.offerJobs(items);
  }

  /**
   * Checks the token still holds (a revocation message may have been missed), then re-offers,
   * in a batch with other links. A re-read that fails (the database or the jobs service away,
   * often right after the NATS outage that asked for it) is tried again with capped, jittered
   * backoff while the link is open, rather than leaving the station's jobs waiting for the next
   * round. Never rejects.
   */
  resync(): Promise<void> {
    if (!this.linked) return Promise.resolve();
    this.#retry.cancel();
    return this.#rereads.want(this).then(
      () => this.#retry.succeeded(),
      () => this.#retry.failed(),
    );
  }

  close(code: GrpcStatus, details: string): void {
    if (this.#closed) return;
    this.#closeReason = code === GrpcStatus.OK ? 'the agent closed it' : details;
    if (code === GrpcStatus.OK) this.#call.end();
    else this.#call.emit('error', { code, details });
    this.#cleanup();
  }

  #cleanup(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.stop();
    // Held reports were not accepted: the agent sends them again when it reconnects.
    this.#linked?.stop();
    this.#onClosed();
    const station = this.#linked?.station;
    if (!station) return;
    this.#recordClosed(station);
    if (this.#linkedAt !== undefined) {
      this.#logger.info(
        {
          station_id: station.id,
          org_id: station.orgId,
          reason: this.#closeReason,
          linked_s: Math.round((performance.now() - this.#linkedAt) / 1000),
        },
        'station unlinked',
      );
    }
  }

  recordClosedAgain(): void {
    if (this.#linked) this.#recordClosed(this.#linked.station);
  }

  #recordClosed(station: LinkStation): void {
    this.#deps.store
      .linkClosed(station, this.#linkId)
      .catch((err: unknown) => this.#logger.warn({ err }, 'could not record the station offline'));
  }
}
