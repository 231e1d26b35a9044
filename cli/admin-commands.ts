/**
 * `spool admin`: the operator's commands, composed from one module per kind of resource, with the
 * `--url` and `--token` flags every one of them takes.
 */
import type { Command } from 'commander';
import type { Env } from '../lib/config.js';
import { type AdminContext, type AdminFlags, adminClient } from './admin.js';
import {
  addLocationCommands,
  addPrinterCommands,
  addStationCommands,
  addTemplateCommands,
} from './admin-fleet-commands.js';
import { addAuditCommand, addJobCommands } from './admin-job-commands.js';
import { addKeyCommands, addOrgCommands, addPeopleCommands } from './admin-org-commands.js';
import { addPoolCommands } from './admin-pool-commands.js';
import { addSettingsCommands } from './admin-settings-commands.js';
import type { Row } from './admin-tables.js';
import { usageExits } from './exits.js';
import { addReleaseCommands } from './release-commands.js';
import { writePage } from './table.js';
import { addWebhookCommands } from './webhook-commands.js';

/** The options of `spool admin` commands that name a resource by its id. */
const ID_OPTIONS = new Set([
  'org',
  'id',
  'station',
  'location',
  'printer',
  'person',
  'endpoint',
  'delivery',
]);

/**
 * Adds `spool admin` to `program`. An admin command prints the gateway's JSON answer; where the
 * gateway answers 204 without a body, it prints `empty` instead, so every admin command prints JSON.
 */
export function addAdminCommands(program: Command, env: Env): Command {
  let flags: AdminFlags = {};
  const ctx: AdminContext = {
    client: () => adminClient(env, flags),
    async admin(method, path, body, empty) {
      const client = await adminClient(env, flags);
      const answer = (await client.request(method, path, body)) ?? empty;
      if (answer !== undefined) process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    },
    async list(path, format, columns) {
      const client = await adminClient(env, flags);
      writePage(format, (await client.request('GET', path)) as { items: Row[] }, columns);
    },
  };

  const adminCommand = program
    .command('admin')
    .description(
      'operator commands against a running gateway (--url and --token, or SPOOL_URL and SPOOL_ADMIN_TOKEN)',
    );
  // The order here is the order of `spool admin --help`.
  addOrgCommands(adminCommand, ctx);
  addPeopleCommands(adminCommand, ctx);
  addKeyCommands(adminCommand, ctx);
  addLocationCommands(adminCommand, ctx);
  addStationCommands(adminCommand, ctx);
  addTemplateCommands(adminCommand, ctx);
  addSettingsCommands(adminCommand, ctx);
  addWebhookCommands(adminCommand, ctx.admin, ctx.list);
  addPrinterCommands(adminCommand, ctx);
  addPoolCommands(adminCommand, ctx);
  addJobCommands(adminCommand, ctx);
  addReleaseCommands(adminCommand, ctx);
  addAuditCommand(adminCommand, ctx);
  addConnectionFlags(adminCommand, (f) => {
    flags = f;
  });
  usageExits(adminCommand);
  // An empty id would name a different route (`DELETE /orgs/` is not a deletion of anything).
  adminCommand.hook('preAction', (_admin, action) => {
    for (const [name, value] of Object.entries(action.opts())) {
      if (ID_OPTIONS.has(name) && value === '') {
        action.error(`error: --${name} must not be empty`, { exitCode: 2 });
      }
    }
  });
  return adminCommand;
}

/**
 * Gives every command under `spool admin` the flags `--url` (where Spool answers; beats SPOOL_URL)
 * and `--token` (the operator token; beats SPOOL_ADMIN_TOKEN and .spool/admin-token). A command
 * that already has a `--url` of its own (a webhook endpoint's) takes `--spool-url` instead.
 * `onFlags` receives the flags of the command about to run.
 */
export function addConnectionFlags(adminCommand: Command, onFlags: (f: AdminFlags) => void): void {
  const leaves = (cmd: Command): Command[] =>
    cmd.commands.length === 0 ? [cmd] : cmd.commands.flatMap(leaves);
  for (const leaf of leaves(adminCommand)) {
    const ownUrl = leaf.options.some((o) => o.long === '--url');
    leaf.option(
      ownUrl ? '--spool-url <url>' : '--url <url>',
      'where Spool answers (default SPOOL_URL, else http://localhost:8080)',
    );
    leaf.option(
      '--token <token>',
      'the operator token (default SPOOL_ADMIN_TOKEN, else .spool/admin-token); other users of this machine can see it in ps: prefer the environment',
    );
  }
  adminCommand.hook('preAction', (_admin, action) => {
    const opts = action.opts<{ url?: string; spoolUrl?: string; token?: string }>();
    const ownUrl = action.options.some((o) => o.long === '--spool-url');
    onFlags({ url: ownUrl ? opts.spoolUrl : opts.url, token: opts.token });
  });
}
