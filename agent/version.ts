/**
 * The agent's version: fixed at build time in the packaged agent (scripts/build-agent.ts defines
 * `SPOOL_AGENT_VERSION`), read from package.json when run from a checkout.
 */
import { readFileSync } from 'node:fs';

declare const SPOOL_AGENT_VERSION: string | undefined;

let cached: string | undefined;

export function agentVersion(): string {
  if (typeof SPOOL_AGENT_VERSION === 'string') return SPOOL_AGENT_VERSION;
  cached ??= (() => {
    try {
      const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
      const version = (JSON.parse(text) as { version?: unknown }).version;
      return typeof version === 'string' ? version : 'unknown';
    } catch {
      return 'unknown';
    }
  })();
  return cached;
}
