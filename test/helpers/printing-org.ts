/**
 * A running Spool with an organization, a key with every scope, and a real `spool agent` whose
 * `file:` printer writes each job it prints into a temporary folder: what an integrator has once
 * a station is set up.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { SCOPES } from '../../lib/credentials.js';
import { spawnSpool } from './spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from './system.js';

export interface PrintingOrg {
  sys: TestSystem;
  orgId: string;
  /** An API key with every scope. */
  key: string;
  /** The id of the agent's printer `desk`. */
  printerId: string;
  /** Where `desk` writes what it prints. */
  printed: string;
  /** The files `desk` has written so far. */
  printedFiles(): Promise<string[]>;
  stop(): Promise<void>;
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Starts it all; `stop()` ends the agent and the system and removes the folders. */
export async function startPrintingOrg(
  options: Parameters<typeof startTestSystem>[0] = {},
): Promise<PrintingOrg> {
  const sys = await startTestSystem(options);
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);
  const printed = await tempDir('spool-printed-');
  const state = await tempDir('spool-agent-state-');
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      sys.linkAddress,
      '--token',
      station.token,
      '--state-dir',
      state,
      '--printer',
      `desk=file:${printed}`,
    ],
    { LOG_LEVEL: 'info' },
  );
  const printers = await eventually(
    () =>
      call<{ printers: Array<{ id: string; name: string; station_online: boolean }> }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/printers`,
        { token: key },
      ),
    (r) => r.body.printers.some((p) => p.name === 'desk' && p.station_online),
    30_000,
  );
  const printerId = printers.body.printers.find((p) => p.name === 'desk')?.id as string;
  return {
    sys,
    orgId,
    key,
    printerId,
    printed,
    printedFiles: async () => (await readdir(printed)).filter((f) => !f.startsWith('.')),
    async stop() {
      await agent.stop();
      await sys.stop();
      await Promise.all([printed, state].map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}

/** Registers `stop` with ava's context so a failing test still cleans up. */
export function stopAfter(t: ExecutionContext, org: PrintingOrg): void {
  t.teardown(() => org.stop());
}
