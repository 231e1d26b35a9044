/**
 * The commands of `spool` and their help. Building them reads nothing and starts nothing, so the
 * help can be checked without running a command; `main.ts` parses the command line.
 */
import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Env } from '../lib/config.js';
import { ROLES } from '../lib/roles.js';
import { spoolVersion } from '../lib/version.js';
import { type AdminFlags, type AdminList, adminClient } from './admin.js';
import { addAdminFleetCommands, addConnectionFlags, orgList } from './admin-commands.js';
import { INVITATION_COLUMNS, KEY_COLUMNS, PERSON_COLUMNS, type Row } from './admin-tables.js';
import { addAgentCommands } from './agent.js';
import { COMPONENTS, type Component } from './components.js';
import { registerJobsCommands, usageExits } from './jobs-commands.js';
import { sealFile } from './seal.js';
import { type Format, formatOption, writePage } from './table.js';
import { addWebhookCommands } from './webhook-commands.js';

/**
 * Builds the `spool` command. An admin command prints the gateway's JSON answer; where the gateway
 * answers 204 without a body, it prints `empty` instead, so every admin command prints JSON.
 */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** A whole number of days, at least 1, for a retention flag; anything else is wrong usage. */
function wholeDays(raw: string): number {
  if (!/^\d{1,6}$/.test(raw.trim()) || Number(raw) < 1) {
    throw new InvalidArgumentError('give a whole number of days, at least 1');
  }
  return Number(raw);
}

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

export function buildProgram(env: Env): Command {
  let flags: AdminFlags = {};
  async function admin(method: string, path: string, body?: unknown, empty?: unknown) {
    const client = await adminClient(env, flags);
    const answer = (await client.request(method, path, body)) ?? empty;
    if (answer !== undefined) process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
  }
  const list: AdminList = async (path, format, columns) => {
    const client = await adminClient(env, flags);
    writePage(format, (await client.request('GET', path)) as { items: Row[] }, columns);
  };

  const program = new Command('spool')
    .description('Spool, the print-job router')
    .version(spoolVersion(), '-V, --version', 'print the version of spool')
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

  const adminCommand = program
    .command('admin')
    .description(
      'operator commands against a running gateway (--url and --token, or SPOOL_URL and SPOOL_ADMIN_TOKEN)',
    );

  const org = adminCommand.command('org').description('organizations');
  org
    .command('create')
    .description('create an organization; prints {org}')
    .requiredOption('--name <name>', 'the organization name')
    .action((opts: { name: string }) => admin('POST', '/orgs', { name: opts.name }));
  org
    .command('get')
    .description('show an organization; prints {org}')
    .argument('[org]', 'organization id')
    // As every other command takes it.
    .option('--org <org>', 'organization id (instead of the argument)')
    .action((id: string | undefined, opts: { org?: string }, command: Command) => {
      const org = opts.org ?? id;
      if (!org || (opts.org !== undefined && id !== undefined)) {
        command.error('error: give the organization id once, as --org ORG or as the argument', {
          exitCode: 2,
        });
      }
      return admin('GET', `/orgs/${encodeURIComponent(org as string)}`);
    });

  org
    .command('delete')
    .description(
      'delete an organization and everything it has: keys, people, stations, printers, locations, jobs and their documents, templates, webhook endpoints and deliveries (the audit log keeps its entries); prints {deleted: true, id}',
    )
    .requiredOption('--org <org>', 'organization id')
    .option('--yes', 'yes, delete it: this cannot be undone')
    .action(async (opts: { org: string; yes?: boolean }, command: Command) => {
      if (!opts.yes) {
        command.error(
          'error: deleting an organization cannot be undone; add --yes to delete it and everything it has',
          { exitCode: 2 },
        );
      }
      const client = await adminClient(env, flags);
      const path = `/orgs/${encodeURIComponent(opts.org)}`;
      // A large organization takes more than one request; each goes on where the last stopped.
      let deleted = 0;
      for (;;) {
        const answer = (await client.request('DELETE', path)) as
          | { deleting?: boolean; deleted?: number }
          | undefined;
        if (!answer?.deleting) break;
        deleted += answer.deleted ?? 0;
        process.stderr.write(`deleted ${deleted} rows so far; going on\n`);
      }
      process.stdout.write(`${JSON.stringify({ deleted: true, id: opts.org }, null, 2)}\n`);
    });

  adminCommand
    .command('invite')
    .description(
      'invite a person to the console; prints {invitation, url}: send them the url (single-use, 7 days; an earlier pending invitation of the email stops working)',
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--email <email>', 'the email address of the person invited')
    .addOption(
      new Option('--role <role>', 'the role they get')
        .choices(['viewer', 'developer', 'admin', 'owner'])
        .makeOptionMandatory(),
    )
    .action((opts: { org: string; email: string; role: string }) =>
      admin('POST', `/orgs/${encodeURIComponent(opts.org)}/invitations`, {
        email: opts.email,
        role: opts.role,
      }),
    );

  const invitation = adminCommand
    .command('invitation')
    .description('pending invitations to the console (spool admin invite sends one)');
  orgList(
    invitation
      .command('list')
      .description(
        "list an organization's pending invitations, oldest first, with who sent each; never their links",
      ),
    (org) => `/orgs/${encodeURIComponent(org)}/invitations`,
    INVITATION_COLUMNS,
    list,
  );
  invitation
    .command('get')
    .description('show an invitation, pending or not; prints {invitation} with used_at, revoked_at')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <invitation>', 'invitation id')
    .action((opts: { org: string; id: string }) =>
      admin(
        'GET',
        `/orgs/${encodeURIComponent(opts.org)}/invitations/${encodeURIComponent(opts.id)}`,
      ),
    );
  invitation
    .command('revoke')
    .description('revoke an invitation: its link stops working at once; prints {revoked: true, id}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <invitation>', 'invitation id')
    .action((opts: { org: string; id: string }) =>
      admin(
        'DELETE',
        `/orgs/${encodeURIComponent(opts.org)}/invitations/${encodeURIComponent(opts.id)}`,
        undefined,
        { revoked: true, id: opts.id },
      ),
    );

  const person = adminCommand.command('person').description("an organization's members");
  const member = (org: string, id: string) =>
    `/orgs/${encodeURIComponent(org)}/people/${encodeURIComponent(id)}`;
  person
    .command('list')
    .description("list an organization's members with their roles, oldest first")
    .requiredOption('--org <org>', 'organization id')
    .addOption(formatOption())
    .action((opts: { org: string; format: Format }) =>
      list(`/orgs/${encodeURIComponent(opts.org)}/people`, opts.format, PERSON_COLUMNS),
    );
  person
    .command('role')
    .description("change a member's role, as an owner would; prints {member}")
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <person>', 'person id (spool admin person list shows it)')
    .addOption(
      new Option('--role <role>', 'the new role').choices([...ROLES]).makeOptionMandatory(),
    )
    .action((opts: { org: string; id: string; role: string }) =>
      admin('PATCH', member(opts.org, opts.id), { role: opts.role }),
    );
  person
    .command('remove')
    .description(
      'remove a member from the organization (their sessions lose it at once); prints {removed: true, id}',
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <person>', 'person id')
    .action((opts: { org: string; id: string }) =>
      admin('DELETE', member(opts.org, opts.id), undefined, { removed: true, id: opts.id }),
    );

  const key = adminCommand.command('key').description('API keys');
  key
    .command('create')
    .description('create an API key; prints {key, secret}, the secret only this once')
    .requiredOption('--org <org>', 'organization id')
    .addOption(
      // Required, as by the API: a live key is billed, and no command should make one unasked.
      new Option('--mode <mode>', 'live or test').choices(['live', 'test']).makeOptionMandatory(),
    )
    .option('--scope <scope>', 'a scope; repeat for several', collect, [])
    .option('--name <name>', 'a name to recognise the key by')
    .option('--expires-at <time>', 'RFC 3339 time after which the key stops working')
    .option('--allowed-ip <cidr>', 'an IP address or CIDR range; repeat for several', collect, [])
    .action(
      (opts: {
        org: string;
        mode: string;
        scope: string[];
        name?: string;
        expiresAt?: string;
        allowedIp: string[];
      }) =>
        admin('POST', `/orgs/${encodeURIComponent(opts.org)}/keys`, {
          mode: opts.mode,
          scopes: opts.scope,
          ...(opts.name === undefined ? {} : { name: opts.name }),
          ...(opts.expiresAt === undefined ? {} : { expires_at: opts.expiresAt }),
          ...(opts.allowedIp.length === 0 ? {} : { allowed_ips: opts.allowedIp }),
        }),
    );
  orgList(
    key.command('list').description("list an organization's API keys, a page at a time"),
    (org) => `/orgs/${encodeURIComponent(org)}/keys`,
    KEY_COLUMNS,
    list,
  );
  key
    .command('revoke')
    .description('revoke an API key at once; prints {revoked: true, id}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <key>', 'key id')
    .action((opts: { org: string; id: string }) =>
      admin(
        'DELETE',
        `/orgs/${encodeURIComponent(opts.org)}/keys/${encodeURIComponent(opts.id)}`,
        undefined,
        { revoked: true, id: opts.id },
      ),
    );

  const location = adminCommand.command('location').description('locations');
  location
    .command('create')
    .description('create a location; prints {location}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--name <name>', 'the location name')
    .option('--address <address>', 'a postal address')
    .option('--timezone <zone>', 'an IANA time zone such as Europe/Berlin')
    .action((opts: { org: string; name: string; address?: string; timezone?: string }) =>
      admin('POST', `/orgs/${encodeURIComponent(opts.org)}/locations`, {
        name: opts.name,
        ...(opts.address === undefined ? {} : { address: opts.address }),
        ...(opts.timezone === undefined ? {} : { timezone: opts.timezone }),
      }),
    );

  const station = adminCommand.command('station').description('stations');
  station
    .command('create')
    .description('create a station; prints {station, token}, the device token only this once')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--name <name>', 'the station name')
    .option('--location <id>', 'the location the station is in')
    .option('--region <region>', "its home region; the gateway's own region when left out")
    .action((opts: { org: string; name: string; location?: string; region?: string }) =>
      admin('POST', `/orgs/${encodeURIComponent(opts.org)}/stations`, {
        name: opts.name,
        ...(opts.location === undefined ? {} : { location_id: opts.location }),
        ...(opts.region === undefined ? {} : { region: opts.region }),
      }),
    );

  station
    .command('rotate-token')
    .description(
      "give a station a new device token; the old one stops working at once, and the station's agent stops until it is given the new one",
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <station>', 'station id')
    .action((opts: { org: string; id: string }) =>
      admin(
        'POST',
        `/orgs/${encodeURIComponent(opts.org)}/stations/${encodeURIComponent(opts.id)}/token`,
      ),
    );
  station
    .command('revoke-token')
    .description("revoke a station's device token and cut its link; prints {revoked: true, id}")
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <station>', 'station id')
    .action((opts: { org: string; id: string }) =>
      admin(
        'DELETE',
        `/orgs/${encodeURIComponent(opts.org)}/stations/${encodeURIComponent(opts.id)}/token`,
        undefined,
        { revoked: true, id: opts.id },
      ),
    );

  const template = adminCommand.command('template').description('templates');
  template
    .command('create')
    .description('create a template; prints {template}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--name <name>', 'the template name')
    .addOption(
      new Option('--kind <kind>', 'what the body is')
        .choices(['text', 'zpl', 'escpos'])
        .makeOptionMandatory(),
    )
    .requiredOption('--body-file <file>', 'a file with the body, using {{field}} placeholders')
    .option(
      '--field <name[=default]>',
      'a field; with =default it is optional; repeatable',
      collect,
      [],
    )
    .action(
      async (opts: {
        org: string;
        name: string;
        kind: string;
        bodyFile: string;
        field: string[];
      }) =>
        admin('POST', `/orgs/${encodeURIComponent(opts.org)}/templates`, {
          name: opts.name,
          kind: opts.kind,
          body: await readFile(opts.bodyFile, 'utf8'),
          fields: opts.field.map((f) => {
            const eq = f.indexOf('=');
            return eq < 0 ? { name: f } : { name: f.slice(0, eq), default: f.slice(eq + 1) };
          }),
        }),
    );

  const settings = adminCommand.command('settings').description('installation-wide settings');
  settings
    .command('get')
    .description('show the settings; prints {settings}')
    .action(() => admin('GET', '/settings'));
  settings
    .command('set')
    .description('change the settings given; prints {settings}')
    .addOption(
      new Option(
        '--job-document-retention-days <days>',
        'days a job document is kept after it finishes',
      ).argParser(wholeDays),
    )
    .addOption(
      new Option('--upload-retention-days <days>', 'days an upload is kept').argParser(wholeDays),
    )
    .addOption(
      new Option(
        '--webhook-delivery-retention-days <days>',
        'days a finished webhook delivery stays in the delivery log',
      ).argParser(wholeDays),
    )
    .option('--notice <text>', 'a notice on the public status page ("" for none)')
    .option('--pricing-file <file>', 'a JSON file of the public prices in cents ("" to withdraw)')
    .option('--downloads-file <file>', 'a JSON file of the latest agent release per platform')
    .action(
      async (
        opts: {
          jobDocumentRetentionDays?: number;
          uploadRetentionDays?: number;
          webhookDeliveryRetentionDays?: number;
          notice?: string;
          pricingFile?: string;
          downloadsFile?: string;
        },
        command: Command,
      ) => {
        // The connection's flags (--url, --token) change nothing.
        const changes = command.options.filter(
          (o) => !['url', 'token'].includes(o.attributeName()),
        );
        if (changes.every((o) => opts[o.attributeName() as keyof typeof opts] === undefined)) {
          const flags = changes.map((o) => o.long).join(', ');
          command.error(`error: nothing to change: give at least one of ${flags}`, { exitCode: 2 });
        }
        const jsonFile = async (file: string | undefined, name: string) => {
          if (file === undefined) return {};
          if (file === '') return { [name]: null };
          const text = await readFile(file, 'utf8');
          try {
            return { [name]: JSON.parse(text) };
          } catch (err) {
            throw new Error(`${file} is not JSON: ${(err as Error).message}`);
          }
        };
        return admin('PATCH', '/settings', {
          ...(opts.jobDocumentRetentionDays === undefined
            ? {}
            : { job_document_retention_days: opts.jobDocumentRetentionDays }),
          ...(opts.uploadRetentionDays === undefined
            ? {}
            : { upload_retention_days: opts.uploadRetentionDays }),
          ...(opts.webhookDeliveryRetentionDays === undefined
            ? {}
            : { webhook_delivery_retention_days: opts.webhookDeliveryRetentionDays }),
          ...(opts.notice === undefined ? {} : { notice: opts.notice === '' ? null : opts.notice }),
          ...(await jsonFile(opts.pricingFile, 'pricing')),
          ...(await jsonFile(opts.downloadsFile, 'downloads')),
        });
      },
    );

  addWebhookCommands(adminCommand, admin, list);
  addAdminFleetCommands(adminCommand, admin, list);
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
  registerJobsCommands(program, env);

  return program;
}
