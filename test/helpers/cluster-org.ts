/**
 * What the tests that run Spool as separate processes (helpers/cluster.ts) set up first: an
 * organization with a key of every scope and a station, a real `spool agent` for the station, and
 * the id of a printer once its agent reported it online.
 */
import { SCOPES } from '../../lib/credentials.js';
import { CLUSTER_OPERATOR_TOKEN } from './cluster.js';
import { type SpoolProcess, spawnSpool } from './spool.js';
import { call, eventually } from './system.js';

/** Where the cluster's gateway answers. */
interface Gateway {
  url: string;
}

export interface ClusterOrg {
  orgId: string;
  key: string;
  station: { id: string; token: string };
}

export async function setUpOrg(cluster: Gateway, stationName = 'Front desk'): Promise<ClusterOrg> {
  const admin = { token: CLUSTER_OPERATOR_TOKEN };
  const org = await call<{ org: { id: string } }>(cluster.url, 'POST', '/admin/v1/orgs', {
    ...admin,
    body: { name: 'Print Co' },
  });
  const orgId = org.body.org.id;
  const key = await call<{ secret: string }>(cluster.url, 'POST', `/admin/v1/orgs/${orgId}/keys`, {
    ...admin,
    body: { mode: 'live', scopes: SCOPES },
  });
  return { orgId, key: key.body.secret, station: await addStation(cluster, orgId, stationName) };
}

export async function addStation(cluster: Gateway, orgId: string, name: string) {
  const res = await call<{ station: { id: string }; token: string }>(
    cluster.url,
    'POST',
    `/admin/v1/orgs/${orgId}/stations`,
    { token: CLUSTER_OPERATOR_TOKEN, body: { name } },
  );
  return { id: res.body.station.id, token: res.body.token };
}

/** `spool agent` for a station, with its printers (`name=backend:…`) and its state directory. */
export function startAgent(
  server: string,
  token: string,
  printers: string[],
  stateDir: string,
): SpoolProcess {
  return spawnSpool(
    [
      'agent',
      '--server',
      server,
      '--token',
      token,
      '--state-dir',
      stateDir,
      ...printers.flatMap((p) => ['--printer', p]),
    ],
    { LOG_LEVEL: 'info' },
  );
}

/** The id of the printer `name`, once its station is online. */
export async function printerId(
  cluster: Gateway,
  setup: ClusterOrg,
  name: string,
): Promise<string> {
  const res = await eventually(
    () =>
      call<{
        printers: Array<{ id: string; name: string; station_id: string; station_online: boolean }>;
      }>(cluster.url, 'GET', `/v1/orgs/${setup.orgId}/printers`, { token: setup.key }),
    (r) => r.body.printers.some((p) => p.name === name && p.station_online),
    20_000,
  );
  return res.body.printers.find((p) => p.name === name)?.id as string;
}
