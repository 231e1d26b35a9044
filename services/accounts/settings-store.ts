/**
 * The installation's settings (retention, status notice, pricing, downloads), one row per setting
 * with a JSON value; what was never set reads as its default.
 */
import type pg from 'pg';
import type { Settings } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';

/**
 * Defaults of the settings (spec §2: documents 30 days after a job finishes, uploads 7 days; the
 * webhook delivery log 30 days after a delivery finishes; the audit log a year, long enough to
 * answer "who changed this" about last year's incident).
 */
export const DEFAULT_SETTINGS: Settings = {
  jobDocumentRetentionDays: 30,
  uploadRetentionDays: 7,
  webhookDeliveryRetentionDays: 30,
  auditRetentionDays: 365,
  statusNotice: '',
  pricingJson: '',
  downloadsJson: '',
};

const SETTING_NAMES: Record<keyof Settings, string> = {
  jobDocumentRetentionDays: 'job_document_retention_days',
  uploadRetentionDays: 'upload_retention_days',
  webhookDeliveryRetentionDays: 'webhook_delivery_retention_days',
  auditRetentionDays: 'audit_retention_days',
  statusNotice: 'status_notice',
  pricingJson: 'pricing',
  downloadsJson: 'downloads',
};

export interface SettingsStore {
  getSettings(): Promise<Settings>;
  /** Writes the settings given (undefined ones stay) and answers them all. */
  updateSettings(changes: Partial<Settings>): Promise<Settings>;
}

async function readSettings(q: pg.Pool | pg.PoolClient): Promise<Settings> {
  const { rows } = await q.query<{ name: string; value: unknown }>(
    'SELECT name, value FROM settings',
  );
  const stored = new Map(rows.map((r) => [r.name, r.value]));
  const settings: Settings = { ...DEFAULT_SETTINGS };
  for (const [key, name] of Object.entries(SETTING_NAMES) as [keyof Settings, string][]) {
    const value = stored.get(name);
    if (value === undefined) continue;
    if (typeof DEFAULT_SETTINGS[key] === 'number' && typeof value === 'number') {
      (settings as unknown as Record<string, unknown>)[key] = value;
    } else if (typeof DEFAULT_SETTINGS[key] === 'string') {
      // Text settings are kept as JSON text values; objects (pricing, downloads) as JSON.
      (settings as unknown as Record<string, unknown>)[key] =
        typeof value === 'string' ? value : JSON.stringify(value);
    }
  }
  return settings;
}

export function createSettingsStore(pool: pg.Pool, clock: Clock): SettingsStore {
  return {
    getSettings: () => readSettings(pool),

    async updateSettings(changes) {
      return withTx(pool, async (tx) => {
        for (const [key, value] of Object.entries(changes) as [
          keyof Settings,
          number | string | undefined,
        ][]) {
          if (value === undefined) continue;
          const json =
            (key === 'pricingJson' || key === 'downloadsJson') && value !== ''
              ? String(value)
              : JSON.stringify(value);
          await tx.query(
            `INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
            [SETTING_NAMES[key], json, clock.now()],
          );
        }
        return readSettings(tx);
      });
    },
  };
}
