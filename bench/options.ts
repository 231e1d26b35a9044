/**
 * `npm run bench -- [options]`: what the harness runs and against what. By default it starts
 * everything itself (PostgreSQL, nats-server, Redis, `spool dev`); with `--spool-url` it measures
 * a Spool that is already running, given the servers it uses.
 */
import { parseArgs } from 'node:util';

export const SCENARIOS = [
  'ingest',
  'e2e',
  'production',
  'fixed-rate',
  'fanout',
  'fleet',
  'streams',
  'pool',
  'regions',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface Options {
  /** A running Spool's gateway; undefined: start `spool dev`. */
  spoolUrl: string | undefined;
  linkAddress: string | undefined;
  adminToken: string | undefined;
  databaseUrl: string | undefined;
  natsUrl: string | undefined;
  /** The jobs service's gRPC address, for the fleet's own stations process. */
  servicesAddr: string | undefined;
  spoolPid: number | undefined;
  natsPid: number | undefined;
  redis: { host: string; port: number } | undefined;
  repeats: number;
  /** Seconds each measured run lasts. */
  seconds: number;
  only: Scenario[];
  fleetStations: number;
  agents: number;
  /** Write V8 CPU profiles of Spool's processes (`spool dev`, `spool serve …`) here. */
  cpuProf: string | undefined;
  /** Load pg_stat_statements into the private PostgreSQL and write its top statements here. */
  pgStatements: string | undefined;
  out: string;
}

export const USAGE = `npm run bench -- [options]

Starts PostgreSQL, nats-server, Redis and \`spool dev\` (or uses the given ones), measures the
ceilings, the BullMQ peer and Spool's scenarios, prints one table and writes it with the machine's
description to bench/results/latest.{md,json,svg}.

  --only LIST            scenarios to run, comma separated: ${SCENARIOS.join(', ')} (default: all)
  --repeats N            runs of each scenario and ceiling (default 3)
  --seconds N            length of each measured run (default 5)
  --agents N             simulated agents for the end-to-end, production and fixed-rate scenarios
                         (default 50)
  --fleet-stations N     station links held open in the fleet scenario (default 10000)
  --cpu-prof DIR         run Spool's processes under node --cpu-prof, writing .cpuprofile files
                         to DIR
  --pg-statements FILE   load pg_stat_statements into the private PostgreSQL and write the
                         statements that took the most of its time, over the whole run, to FILE
  --out DIR              where results go (default bench/results)

  A Spool that is already running (all of these are then needed, except the pids):
  --spool-url URL        its gateway, e.g. http://127.0.0.1:8080
  --link-address H:P     its station link
  --admin-token TOKEN    its operator token (or SPOOL_ADMIN_TOKEN)
  --database-url URL     the PostgreSQL it uses (the SERIALIZABLE ceiling runs there)
  --nats-url URL         the nats-server it uses (the JetStream ceilings run there)
  --services-addr H:P    its jobs service's gRPC address (omit: the fleet uses --link-address)
  --spool-pid PID        the process holding the station links, for memory and CPU
  --nats-pid PID         the nats-server, for memory and CPU
  --redis H:P            a Redis for the BullMQ peer (default: a private redis-server)
`;

function int(value: string | undefined, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}`);
  return n;
}

function hostPort(value: string, name: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(value);
  if (!m) throw new Error(`--${name} must be HOST:PORT`);
  return { host: m[1] as string, port: Number(m[2]) };
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', short: 'h' },
      only: { type: 'string' },
      repeats: { type: 'string' },
      seconds: { type: 'string' },
      agents: { type: 'string' },
      'fleet-stations': { type: 'string' },
      'cpu-prof': { type: 'string' },
      'pg-statements': { type: 'string' },
      out: { type: 'string' },
      'spool-url': { type: 'string' },
      'link-address': { type: 'string' },
      'admin-token': { type: 'string' },
      'database-url': { type: 'string' },
      'nats-url': { type: 'string' },
      'services-addr': { type: 'string' },
      'spool-pid': { type: 'string' },
      'nats-pid': { type: 'string' },
      redis: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const only = (values.only ?? SCENARIOS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of only) {
    if (!(SCENARIOS as readonly string[]).includes(s)) {
      throw new Error(`--only: unknown scenario ${s}; scenarios are ${SCENARIOS.join(', ')}`);
    }
  }
  const spoolUrl = values['spool-url'];
  const adminToken = values['admin-token'] ?? env.SPOOL_ADMIN_TOKEN;
  if (spoolUrl) {
    const missing = [
      ['link-address', values['link-address']],
      ['admin-token', adminToken],
      ['database-url', values['database-url']],
      ['nats-url', values['nats-url']],
    ].filter(([, v]) => !v);
    if (missing.length > 0) {
      throw new Error(`--spool-url also needs ${missing.map(([n]) => `--${n}`).join(', ')}`);
    }
  }
  return {
    spoolUrl: spoolUrl?.replace(/\/+$/, ''),
    linkAddress: values['link-address'],
    adminToken,
    databaseUrl: values['database-url'],
    natsUrl: values['nats-url'],
    servicesAddr: values['services-addr'],
    spoolPid: values['spool-pid'] ? int(values['spool-pid'], 'spool-pid', 0) : undefined,
    natsPid: values['nats-pid'] ? int(values['nats-pid'], 'nats-pid', 0) : undefined,
    redis: values.redis ? hostPort(values.redis, 'redis') : undefined,
    repeats: int(values.repeats, 'repeats', 3),
    seconds: int(values.seconds, 'seconds', 5),
    only: only as Scenario[],
    fleetStations: int(values['fleet-stations'], 'fleet-stations', 10_000),
    agents: int(values.agents, 'agents', 50),
    cpuProf: values['cpu-prof'],
    pgStatements: values['pg-statements'],
    out: values.out ?? 'bench/results',
  };
}
