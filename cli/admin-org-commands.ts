/**
 * `spool admin` commands for organizations and who may use them: `org`, `invite`, `invitation`,
 * `person` (the members) and `key` (API keys).
 */
import { type Command, Option } from 'commander';
import { ROLES } from '../lib/roles.js';
import type { AdminContext } from './admin.js';
import { orgList, type Page, paged, query } from './admin-options.js';
import { INVITATION_COLUMNS, KEY_COLUMNS, ORG_COLUMNS, PERSON_COLUMNS } from './admin-tables.js';
import { collect } from './flags.js';
import { type Format, formatOption } from './table.js';

/** `spool admin org …`: create, get, delete and list organizations. */
export function addOrgCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
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
      const client = await ctx.client();
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
  paged(
    org
      .command('list')
      .description(
        'list organizations, oldest first; --name keeps those whose name contains it, --deleting those part-deleted',
      )
      .option('--name <text>', 'part of the name, any case')
      .option('--deleting', 'only organizations whose deletion began and did not finish'),
  ).action((opts: Page & { name?: string; deleting?: boolean }) =>
    list(
      `/orgs${query({
        q: opts.name,
        deleting: opts.deleting ? 'true' : undefined,
        limit: opts.limit,
        cursor: opts.cursor,
      })}`,
      opts.format,
      ORG_COLUMNS,
    ),
  );
}

/** `spool admin invite`, `invitation …` and `person …`: the people of an organization's console. */
export function addPeopleCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
  adminCommand
    .command('invite')
    .description(
      'invite a person to the console; prints {invitation, url}: send them the url (single-use, 7 days; an earlier pending invitation of the email stops working)',
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--email <email>', 'the email address of the person invited')
    .addOption(
      new Option('--role <role>', 'the role they get').choices([...ROLES]).makeOptionMandatory(),
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
}

/** `spool admin key …`: an organization's API keys. */
export function addKeyCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
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
}
