/**
 * Spool's version, as its start-up lines, `spool --version`, the agent's `hello` and telemetry's
 * `service.version` give it: fixed at build time in the packaged agent (scripts/build-agent.ts
 * defines `SPOOL_VERSION`), read from package.json when run from a checkout.
 */
import { readFileSync } from 'node:fs';

declare const SPOOL_VERSION: string | undefined;

let cached: string | undefined;

export function spoolVersion(): string {
  if (typeof SPOOL_VERSION === 'string') return SPOOL_VERSION;
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
