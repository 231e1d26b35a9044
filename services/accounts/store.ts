/**
 * The accounts tables behind the accounts RPCs (server.ts): organizations (and a platform's child
 * organizations), API keys and settings, each kept by a store of its own role.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { type ChildOrgStore, createChildOrgStore } from './child-org-store.js';
import { createKeyStore, type KeyStore } from './key-store.js';
import { createOrgStore, type OrgStore } from './org-store.js';
import { createSettingsStore, type SettingsStore } from './settings-store.js';

export interface AccountsStore extends OrgStore, ChildOrgStore, KeyStore, SettingsStore {}

export function createAccountsStore(pool: pg.Pool, clock: Clock): AccountsStore {
  return {
    ...createOrgStore(pool, clock),
    ...createChildOrgStore(pool, clock),
    ...createKeyStore(pool, clock),
    ...createSettingsStore(pool, clock),
  };
}
