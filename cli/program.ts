/**
 * The commands of `spool` and their help. Building them reads nothing and starts nothing, so the
 * help can be checked without running a command; `main.ts` parses the command line.
 */
import { Command, Option } from 'commander';
import type { Env } from '../lib/config.js';
import { spoolVersion } from '../lib/version.js';
import { addAdminCommands } from './admin-commands.js';
import { addAgentCommands } from './agent.js';
import { addApiCommands } from './api-commands.js';
import { COMPONENTS, type Component } from './components.js';
import { sealFile } from './seal.js';

/** Builds the `spool` command: each group of commands comes from its own module. */
export function buildProgram(env: Env): Command {
  const program = new Command('spool')
    .description('Spool, the print-job router')
    .version(spoolVersion(), '-V, --version', 'print the version of spool')
    // `spool --version` only before a command: `spool admin release rollout --version V` is the
    // release's.
    .enablePositionalOptions()
    // The error stays in sight: the command's whole help is one --help away.
    .showHelpAfterError('(add --help for the command’s options)');

  program
    .command('dev')
    .description('run the whole system in one process, for a laptop')
    .action(async () => (await import('./dev.js')).runDev(env));

  program
    .command('serve')
    .description('run one component, configured from the environment')
    .addArgument(
      new Command().createArgument('<component>', 'the component to run').choices(COMPONENTS),
    )
    .action(async (component: Component) => (await import('./serve.js')).serve(component, env));

  addAgentCommands(
    program
      .command('agent')
      .description(
        'the station agent: run it (the default), or look at its status and printers (docs/agent.md)',
      ),
    env,
  );

  program
    .command('seal')
    .description("seal a document to the server's public key; prints a job's content object")
    .argument('<file>', 'the document')
    .addOption(
      new Option(
        '--content-type <type>',
        'what the document is (default: from its extension)',
      ).choices(['application/pdf', 'text/plain', 'application/octet-stream']),
    )
    .option('--public-key <key>', 'seal to this key instead of fetching it from Spool')
    .option('--url <url>', 'where Spool answers (default SPOOL_URL, else http://localhost:8080)')
    .action(
      async (file: string, opts: { contentType?: string; publicKey?: string; url?: string }) => {
        process.stdout.write(`${JSON.stringify(await sealFile(file, opts, env))}\n`);
      },
    );

  program
    .command('migrate')
    .description('apply database migrations (DATABASE_URL)')
    .action(async () => (await import('./serve.js')).runMigrate(env));

  addAdminCommands(program, env);
  addApiCommands(program, env);

  return program;
}
