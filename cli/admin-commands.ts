/**
 * `spool admin` commands for the operator's reads, updates and deletes: organizations by name,
 * stations, printers, locations, templates, jobs and the audit log; and the `--url` and `--token`
 * flags every admin command takes.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { AdminCall, AdminFlags, AdminList } from './admin.js';
import {
  AUDIT_COLUMNS,
  JOB_COLUMNS,
  LOCATION_COLUMNS,
  ORG_COLUMNS,
  PRINTER_COLUMNS,
  type Row,
  STATION_COLUMNS,
  TEMPLATE_COLUMNS,
} from './admin-tables.js';
import { type Columns, type Format, formatOption } from './table.js';

const enc = encodeURIComponent;

/** A query string of the values given (none for an empty one), with its `?`. */
export function query(values: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== '') q.set(name, value);
  }
  return q.size > 0 ? `?${q}` : '';
}

interface Page {
  limit?: string;
  cursor?: string;
  format: Format;
}

/** The options of a list: its page, and `--format`. */
const paged = (cmd: Command) =>
  cmd
    .option('--limit <n>', 'page size (1-200)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .addOption(formatOption());

const inOrg = (cmd: Command) => cmd.requiredOption('--org <org>', 'organization id');

/**
 * Makes `cmd` the list of an organization's resources at `path(org)`, a page at a time:
 * `--org`, `--limit`, `--cursor` and `--format`.
 */
export function orgList(
  cmd: Command,
  path: (org: string) => string,
  columns: Columns<Row>,
  list: AdminList,
): Command {
  return paged(inOrg(cmd)).action((opts: Page & { org: string }) =>
    list(
      `${path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
      opts.format,
      columns,
    ),
  );
}

/**
 * Adds the list, get, update and delete commands of organizations, stations, printers,
 * locations and templates, and `audit`, to `spool admin`.
 */
export function addAdminFleetCommands(
  adminCommand: Command,
  admin: AdminCall,
  list: AdminList,
): void {
  const group = (name: string, description: string) =>
    adminCommand.commands.find((c) => c.name() === name) ??
    adminCommand.command(name).description(description);

  paged(
    group('org', 'organizations')
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

  /** list, get and delete of one kind of resource of an organization. */
  function readAndDelete(name: string, plural: string, what: string, deleteNote: string) {
    const cmd = group(name, plural);
    const path = (org: string, id?: string) =>
      `/orgs/${enc(org)}/${plural}${id === undefined ? '' : `/${enc(id)}`}`;
    cmd
      .command('get')
      .description(`show a ${what}; prints {${name}}`)
      .requiredOption('--org <org>', 'organization id')
      .requiredOption('--id <id>', `${what} id`)
      .action((opts: { org: string; id: string }) => admin('GET', path(opts.org, opts.id)));
    cmd
      .command('delete')
      .description(`delete a ${what}${deleteNote}; prints {deleted: true, id}`)
      .requiredOption('--org <org>', 'organization id')
      .requiredOption('--id <id>', `${what} id`)
      .action((opts: { org: string; id: string }) =>
        admin('DELETE', path(opts.org, opts.id), undefined, { deleted: true, id: opts.id }),
      );
    return { cmd, path };
  }

  const station = readAndDelete(
    'station',
    'stations',
    'station',
    ', its printers and its device token (its unfinished jobs fail)',
  );
  orgList(
    station.cmd
      .command('list')
      .description('list stations with online state, last contact and agent version'),
    station.path,
    STATION_COLUMNS,
    list,
  );
  paged(
    station.cmd
      .command('list-all')
      .description("list every organization's stations, oldest first; --offline: those down now")
      .option('--offline', 'only the stations offline now'),
  ).action((opts: Page & { offline?: boolean }) =>
    list(
      `/stations${query({
        offline: opts.offline ? 'true' : undefined,
        limit: opts.limit,
        cursor: opts.cursor,
      })}`,
      opts.format,
      [{ header: 'org', value: (r) => r.org_id }, ...STATION_COLUMNS],
    ),
  );
  const stationUpdate = station.cmd
    .command('update')
    .description(
      'rename a station, move it to another location or to another home region; prints {station}',
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'station id')
    .option('--name <name>', 'a new name')
    .option('--location <id>', 'the location to move it to')
    .option('--no-location', 'take it out of its location')
    .option('--region <region>', 'its new home region: its agent reconnects, its jobs go there');
  // Both flags set the one value `location`, the later winning: note each, to refuse the pair.
  const locationFlags = new Set<string>();
  stationUpdate.on('option:location', () => locationFlags.add('--location'));
  stationUpdate.on('option:no-location', () => locationFlags.add('--no-location'));
  stationUpdate.action(
    (
      opts: {
        org: string;
        id: string;
        name?: string;
        location?: string | boolean;
        region?: string;
      },
      command: Command,
    ) => {
      if (locationFlags.size > 1) {
        command.error('error: give either --location ID or --no-location, not both', {
          exitCode: 2,
        });
      }
      if (opts.name === undefined && opts.region === undefined && opts.location === undefined) {
        command.error(
          'error: nothing to change: give at least one of --name, --location, --no-location, --region',
          { exitCode: 2 },
        );
      }
      return admin('PATCH', station.path(opts.org, opts.id), {
        ...(opts.name === undefined ? {} : { name: opts.name }),
        ...(opts.region === undefined ? {} : { region: opts.region }),
        ...(opts.location === false ? { location_id: null } : {}),
        ...(typeof opts.location === 'string' ? { location_id: opts.location } : {}),
      });
    },
  );

  const printer = readAndDelete(
    'printer',
    'printers',
    'printer',
    ', whatever its status (its unfinished jobs fail)',
  );
  paged(
    inOrg(
      printer.cmd
        .command('list')
        .description("list an organization's printers, of one station or location if given")
        .option('--station <id>', 'only the printers of this station')
        .option('--location <id>', 'only the printers in this location'),
    ),
  ).action((opts: Page & { org: string; station?: string; location?: string }) =>
    list(
      `${printer.path(opts.org)}${query({
        station_id: opts.station,
        location_id: opts.location,
        limit: opts.limit,
        cursor: opts.cursor,
      })}`,
      opts.format,
      PRINTER_COLUMNS,
    ),
  );

  const location = readAndDelete(
    'location',
    'locations',
    'location',
    ' (refused while a station is in it)',
  );
  paged(inOrg(location.cmd.command('list').description("list an organization's locations"))).action(
    (opts: Page & { org: string }) =>
      list(
        `${location.path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
        opts.format,
        LOCATION_COLUMNS,
      ),
  );
  location.cmd
    .command('update')
    .description("change a location's name, address or time zone; prints {location}")
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'location id')
    .option('--name <name>', 'a new name')
    .option('--address <address>', 'a new postal address ("" for none)')
    .option('--timezone <zone>', 'an IANA time zone such as Europe/Berlin ("" for none)')
    .action(
      (opts: { org: string; id: string; name?: string; address?: string; timezone?: string }) =>
        admin('PATCH', location.path(opts.org, opts.id), {
          ...(opts.name === undefined ? {} : { name: opts.name }),
          ...(opts.address === undefined ? {} : { address: opts.address }),
          ...(opts.timezone === undefined ? {} : { timezone: opts.timezone }),
        }),
    );

  const template = readAndDelete('template', 'templates', 'template', '');
  paged(inOrg(template.cmd.command('list').description("list an organization's templates"))).action(
    (opts: Page & { org: string }) =>
      list(
        `${template.path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
        opts.format,
        TEMPLATE_COLUMNS,
      ),
  );

  template.cmd
    .command('update')
    .description("change a template's name, kind, body or fields; prints {template}")
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'template id')
    .option('--name <name>', 'a new name')
    .option('--kind <kind>', 'text, zpl or escpos')
    .option('--body-file <file>', 'a file with the new body, using {{field}} placeholders')
    .option(
      '--field <name[=default]>',
      'a field, replacing all the fields; with =default it is optional; repeatable',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .action(
      async (opts: {
        org: string;
        id: string;
        name?: string;
        kind?: string;
        bodyFile?: string;
        field: string[];
      }) =>
        admin('PATCH', template.path(opts.org, opts.id), {
          ...(opts.name === undefined ? {} : { name: opts.name }),
          ...(opts.kind === undefined ? {} : { kind: opts.kind }),
          ...(opts.bodyFile === undefined ? {} : { body: await readFile(opts.bodyFile, 'utf8') }),
          ...(opts.field.length === 0
            ? {}
            : {
                fields: opts.field.map((f) => {
                  const eq = f.indexOf('=');
                  return eq < 0 ? { name: f } : { name: f.slice(0, eq), default: f.slice(eq + 1) };
                }),
              }),
        }),
    );

  const job = group('job', "an organization's jobs, for support");
  paged(
    inOrg(
      job
        .command('list')
        .description("list an organization's jobs, newest first, with their counts by status")
        .option('--status <statuses>', 'only these statuses, a comma list (failed,held)')
        .option('--printer <id>', 'only the jobs of this printer')
        .option('--station <id>', 'only the jobs of this station')
        .option('--reference <ref>', 'only the jobs with this reference')
        .option('--created-after <time>', 'only the jobs created after this RFC 3339 time')
        .option('--created-before <time>', 'only the jobs created before this RFC 3339 time'),
    ),
  ).action(
    (
      opts: Page & {
        org: string;
        status?: string;
        printer?: string;
        station?: string;
        reference?: string;
        createdAfter?: string;
        createdBefore?: string;
      },
    ) =>
      list(
        `/orgs/${enc(opts.org)}/jobs${query({
          status: opts.status,
          printer_id: opts.printer,
          station_id: opts.station,
          reference: opts.reference,
          created_after: opts.createdAfter,
          created_before: opts.createdBefore,
          limit: opts.limit,
          cursor: opts.cursor,
        })}`,
        opts.format,
        JOB_COLUMNS,
      ),
  );
  job
    .command('get')
    .description('show a job and its events; prints {job, events}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'job id')
    .action((opts: { org: string; id: string }) =>
      admin('GET', `/orgs/${enc(opts.org)}/jobs/${enc(opts.id)}`),
    );

  paged(
    adminCommand
      .command('audit')
      .description('the audit log of operator and console actions, newest first')
      .option('--org <org>', 'only actions on this organization')
      .option('--actor <actor>', 'only actions of operator or person:<id>')
      .option('--since <time>', 'only actions at or after this RFC 3339 time')
      .option('--until <time>', 'only actions before this RFC 3339 time'),
  ).action((opts: Page & { org?: string; actor?: string; since?: string; until?: string }) =>
    list(
      `/audit${query({
        org: opts.org,
        actor: opts.actor,
        since: opts.since,
        until: opts.until,
        limit: opts.limit,
        cursor: opts.cursor,
      })}`,
      opts.format,
      AUDIT_COLUMNS,
    ),
  );
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
