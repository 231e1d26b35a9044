/**
 * `spool agent`: the station agent. It holds the station's link to Spool, reports its printers and
 * prints the jobs it is sent (docs/station-link.md).
 */
import { readFile } from 'node:fs/promises';
import { credentials } from '@grpc/grpc-js';
import { parsePrinterSpec, runAgent } from '../agent/index.js';
import { type Env, logLevel, optionalStr, port, readConfig, str } from '../lib/config.js';
import { createLogger } from '../lib/logger.js';
import { serveMetrics, telemetry } from '../lib/telemetry.js';
import { onShutdown } from './serve.js';

const agentConfig = {
  logLevel: logLevel(),
  token: optionalStr('SPOOL_DEVICE_TOKEN', 'the station device token (svc_dev_…)'),
  cupsServer: optionalStr(
    'CUPS_SERVER',
    'the CUPS server cups: printers use (default: the local one)',
  ),
  stateDir: str('SPOOL_AGENT_STATE_DIR', {
    description: 'where the agent keeps its journal',
    default: '.spool-agent',
  }),
  metricsHost: str('METRICS_HOST', {
    description: 'address the agent serves GET /metrics on',
    default: '127.0.0.1',
  }),
  metricsPort: port('METRICS_PORT', {
    description: 'port the agent serves GET /metrics on; 0: not served',
    default: 0,
  }),
};

export interface AgentFlags {
  server: string;
  token?: string;
  printer: string[];
  stateDir?: string;
  /** Speak TLS to the server (a load balancer that terminates TLS), trusting the system's CAs. */
  tls?: boolean;
  /** A PEM file of CA certificates to trust instead; implies TLS. */
  ca?: string;
}

export async function runAgentCommand(flags: AgentFlags, env: Env): Promise<void> {
  const config = readConfig(env, agentConfig);
  const token = flags.token ?? config.token;
  if (!token) throw new Error('give the station token with --token or SPOOL_DEVICE_TOKEN');
  if (flags.printer.length === 0) throw new Error('give at least one --printer NAME=BACKEND');
  const printers = flags.printer.map((spec) => parsePrinterSpec(spec));
  const logger = createLogger({ name: 'agent', level: config.logLevel });
  const tls = flags.tls || flags.ca !== undefined;
  const ca = flags.ca === undefined ? undefined : await readFile(flags.ca);
  const agent = await runAgent({
    server: flags.server,
    token,
    printers,
    stateDir: flags.stateDir ?? config.stateDir,
    logger,
    cups: { env, ...(config.cupsServer ? { server: config.cupsServer } : {}) },
    ...(tls ? { credentials: credentials.createSsl(ca ?? null) } : {}),
  });
  const metrics = await serveMetrics(config.metricsHost, config.metricsPort);
  logger.info(
    {
      server: flags.server,
      tls,
      printers: printers.map((p) => p.name),
      ...(metrics ? { metricsPort: metrics.port } : {}),
    },
    'agent started',
  );
  onShutdown(logger, async () => {
    await agent.stop();
    metrics?.server.close();
    await telemetry().shutdown();
  });
  // Resolves after SIGTERM; rejects when the server refuses the token, which retrying cannot fix.
  await agent.done;
}
