/**
 * `spool agent`: the station agent and its everyday commands. `spool agent run` (or plain
 * `spool agent`) holds the station's link to Spool, reports its printers and prints the jobs it is
 * sent (docs/station-link.md); `enroll`, `status`, `printers`, `test-print` and `install-service`
 * are for the person looking after the station (docs/agent.md). The packaged agent
 * (`spool-agent`) is these same commands. Each command's work is in its own module (`agent-run`,
 * `agent-enroll`, `agent-status`, `agent-printers`, `agent-service`); this one gives them their
 * flags.
 */
import { type Command, Option } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../agent/config.js';
import { DEFAULT_UNIT_PATH } from '../agent/service.js';
import type { Env } from '../lib/config.js';
import { type EnrollFlags, enrollStation, formatEnrolled } from './agent-enroll.js';
import { formatPrinters, listPrinters, testPrint } from './agent-printers.js';
import { runAgentCommand } from './agent-run.js';
import { type InstallFlags, installService } from './agent-service.js';
import type { AgentCommonFlags, AgentFlags } from './agent-settings.js';
import { agentStatus, formatStatus, statusExit } from './agent-status.js';
import { collect } from './flags.js';

function commonOptions(command: Command): Command {
  return command
    .option(
      '--config <file>',
      `the configuration file (or SPOOL_AGENT_CONFIG; default ${DEFAULT_CONFIG_PATH} when it exists)`,
    )
    .option(
      '--state-dir <dir>',
      'where the journal and status are kept (or SPOOL_AGENT_STATE_DIR, or state_dir in the file)',
    );
}

function printerOption(command: Command): Command {
  return command.option(
    '--printer <name=backend>',
    'a printer instead of the [printers] table: NAME=file:DIR, NAME=cups:QUEUE, NAME=cups:* or NAME=raw:HOST:PORT; repeatable',
    collect,
    [],
  );
}

/**
 * Adds the agent's commands under `agent` (`spool agent …`, or the packaged `spool-agent …`).
 * `run` is the default, so `spool agent --server …` runs the agent as before.
 */
export function addAgentCommands(agent: Command, env: Env): Command {
  const run = agent
    .command('run', { isDefault: true })
    .description('run the agent: hold the link to Spool and print the jobs it sends')
    .option(
      '--server <host:port>',
      'the station link address (port 7070 in spool dev); several, comma separated, are tried in turn; or server in the file',
    )
    .option(
      '--tls',
      'speak TLS to the server (a load balancer terminating TLS), trusting system CAs',
    )
    .option('--ca <file>', 'PEM file of the CA certificates to trust (implies --tls)')
    .addOption(
      new Option(
        '--token <token>',
        'the device token; discouraged: ps shows it to every user (use token_file or SPOOL_DEVICE_TOKEN)',
      ),
    );
  commonOptions(printerOption(run)).action((opts: AgentFlags) => runAgentCommand(opts, env));

  commonOptions(
    agent
      .command('status')
      .description(
        'whether the agent runs and is connected, its printers, jobs today and the last error (exit 0 connected, 2 not connected or stuck, 3 not running)',
      )
      .option('--json', 'print the status as JSON'),
  ).action(async (opts: AgentCommonFlags & { json?: boolean }) => {
    const report = await agentStatus(opts, env);
    process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : formatStatus(report));
    process.exitCode = statusExit(report);
  });

  commonOptions(
    printerOption(
      agent
        .command('printers')
        .description(
          'the printers each backend finds, CUPS queues included, with their capabilities',
        )
        .option('--json', 'print them as JSON'),
    ),
  ).action(async (opts: AgentCommonFlags & { json?: boolean }) => {
    const printers = await listPrinters(opts, env);
    process.stdout.write(
      opts.json ? `${JSON.stringify({ printers }, null, 2)}\n` : formatPrinters(printers),
    );
  });

  commonOptions(
    printerOption(
      agent
        .command('test-print')
        .description('print a test page on PRINTER, here, without going through Spool')
        .argument('<printer>', 'the printer name (see spool agent printers)'),
    ),
  ).action(async (printer: string, opts: AgentCommonFlags) => {
    const done = await testPrint(printer, opts, env);
    process.stdout.write(`printed a test page on ${done.printer} (${done.backend})\n`);
  });

  commonOptions(
    agent
      .command('enroll')
      .description(
        "exchange the station's enrollment code for its device token, kept in the state directory, so that the agent needs no token",
      )
      .argument('<code>', 'the enrollment code (XXXX-XXXX-XX) made for this station')
      .option(
        '--server <host:port>',
        'the station link address, as the agent is given it; or server in the file',
      )
      .option('--tls', 'speak TLS to the server, trusting system CAs')
      .option('--ca <file>', 'PEM file of the CA certificates to trust (implies --tls)'),
  ).action(async (code: string, opts: EnrollFlags) => {
    const enrolled = await enrollStation(code, opts, env);
    const command = agent.parent ? `${agent.parent.name()} ${agent.name()}` : agent.name();
    process.stdout.write(formatEnrolled(enrolled, command, opts.stateDir));
  });

  agent
    .command('install-service')
    .description(`write the systemd unit that runs the agent (${DEFAULT_UNIT_PATH})`)
    .option('--config <file>', `the configuration file the service uses (${DEFAULT_CONFIG_PATH})`)
    .option('--dry-run', 'print the unit instead of writing it')
    .option('--unit-file <path>', `where to write the unit (${DEFAULT_UNIT_PATH})`)
    .option('--user <name>', 'run as this existing user instead of a dynamic one')
    .action((opts: InstallFlags) => installService(opts, env));

  return agent;
}
