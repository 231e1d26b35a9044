/**
 * A delivery worker's round, in one SERIALIZABLE transaction: the outcomes recorded
 * (outcomes.ts), then due deliveries claimed (claims.ts).
 */
import type pg from 'pg';
import { withTx } from '../../lib/db.js';
import { type ClaimedDelivery, type ClaimInput, claimDue } from './claims.js';
import type { SecretBox } from './crypto.js';
import {
  type AttemptOutcomeInput,
  type RecordInput,
  recordOutcomes,
  type Settled,
} from './outcomes.js';

/** A worker round: its outcomes settled, and the deliveries it claimed. */
export interface Round extends Settled {
  claimed: ClaimedDelivery[];
}

/** What the worker's rounds ask of the database. */
export interface RoundStore {
  /**
   * Records the outcomes of the attempts that finished since the worker's last round, then claims
   * due deliveries when given `claim`. Recording and claiming in one transaction means a worker's
   * two never fail each other's serializable reads, and an attempt costs a share of one
   * transaction rather than of two. With no outcomes and no `expectWork`, an indexed read first
   * checks that anything is due, so an idle poll costs no transaction.
   */
  recordAndClaim(
    outcomes: readonly AttemptOutcomeInput[],
    record: RecordInput,
    claim: ClaimInput | undefined,
  ): Promise<Round>;
}

export function createRoundStore(pool: pg.Pool, box: SecretBox): RoundStore {
  return {
    async recordAndClaim(outcomes, record, claim) {
      if (outcomes.length === 0) {
        if (!claim) return { recorded: [], disabledIn: [], announced: false, claimed: [] };
        if (!claim.expectWork) {
          const { rows: due } = await pool.query(
            `SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $1 LIMIT 1`,
            [claim.now],
          );
          if (due.length === 0)
            return { recorded: [], disabledIn: [], announced: false, claimed: [] };
        }
      }
      return withTx(pool, async (tx) => {
        const settled =
          outcomes.length > 0
            ? await recordOutcomes(tx, outcomes, record, claim === undefined)
            : { recorded: [], disabledIn: [], announced: false };
        const claimed = claim ? await claimDue(tx, claim, box) : [];
        return { ...settled, claimed };
      });
    },
  };
}
