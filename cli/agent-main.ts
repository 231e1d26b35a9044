/**
 * `spool-agent`, the packaged station agent (docs/agent.md, "Installing"): the commands of
 * `spool agent`, bundled with Node into one release artifact. This is its entry point, and the one
 * place it reads `process.env`.
 */
import { Command } from 'commander';
import { TOKEN_REFUSED_EXIT, TokenRefusedError } from '../agent/errors.js';
import { ConfigError } from '../lib/config.js';
import { startTelemetry } from '../lib/telemetry.js';
import { spoolVersion } from '../lib/version.js';
import { addAgentCommands } from './agent.js';

/** Whether the command line runs the agent (rather than one of its everyday commands). */
function runsAgent(args: string[]): boolean {
  const first = args[0];
  if (first === undefined || first === 'run') return true;
  return first.startsWith('-') && !['--help', '-h', '--version', '-V'].includes(first);
}

async function main(): Promise<void> {
  if (runsAgent(process.argv.slice(2))) {
    // The package carries the metrics but not the tracing SDK, which hooks modules as they load
    // and so cannot work on bundled code; traces need Spool run from its sources.
    if (process.env.OTEL_TRACES_EXPORTER || process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
      process.stderr.write('spool-agent: traces are not exported by the packaged agent\n');
    }
    await startTelemetry({ ...process.env, OTEL_TRACES_EXPORTER: 'none' }, 'spool-agent');
  }
  const program = addAgentCommands(
    new Command('spool-agent')
      .description('the Spool station agent (docs/agent.md)')
      .version(spoolVersion(), '-V, --version', 'print the version of the agent')
      .showHelpAfterError('(add --help for the command’s options)'),
    process.env,
  );
  await program.parseAsync(process.argv);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`spool-agent: ${err.message}\n`);
  } else if (err instanceof TokenRefusedError) {
    process.stderr.write(`spool-agent: ${err.message}\n`);
    process.exit(TOKEN_REFUSED_EXIT);
  } else {
    process.stderr.write(`spool-agent: ${(err as Error).message}\n`);
  }
  process.exit(1);
});
