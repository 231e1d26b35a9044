/**
 * `spool admin` commands for an organization's fleet and what it prints with: locations, stations
 * (their device tokens too), printers and templates.
 */
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import type { AdminCall, AdminContext } from './admin.js';
import { addDiagnoseCommand } from './admin-diagnosis.js';
import { enc, inOrg, orgList, type Page, paged, query } from './admin-options.js';
import {
  LOCATION_COLUMNS,
  PRINTER_COLUMNS,
  STATION_COLUMNS,
  TEMPLATE_COLUMNS,
} from './admin-tables.js';
import { collect, templateFields } from './flags.js';

/** An organization's resource at `/orgs/{org}/{plural}[/{id}]`. */
type ResourcePath = (org: string, id?: string) => string;

/** Adds get and delete of one kind of resource of an organization to `cmd`; returns its path. */
function readAndDelete(
  cmd: Command,
  admin: AdminCall,
  name: string,
  plural: string,
  what: string,
  deleteNote: string,
): ResourcePath {
  const path: ResourcePath = (org, id) =>
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
  return path;
}

/** `spool admin location …`. */
export function addLocationCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
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
  const path = readAndDelete(
    location,
    admin,
    'location',
    'locations',
    'location',
    ' (refused while a station is in it)',
  );
  paged(inOrg(location.command('list').description("list an organization's locations"))).action(
    (opts: Page & { org: string }) =>
      list(
        `${path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
        opts.format,
        LOCATION_COLUMNS,
      ),
  );
  location
    .command('update')
    .description("change a location's name, address or time zone; prints {location}")
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'location id')
    .option('--name <name>', 'a new name')
    .option('--address <address>', 'a new postal address ("" for none)')
    .option('--timezone <zone>', 'an IANA time zone such as Europe/Berlin ("" for none)')
    .action(
      (opts: { org: string; id: string; name?: string; address?: string; timezone?: string }) =>
        admin('PATCH', path(opts.org, opts.id), {
          ...(opts.name === undefined ? {} : { name: opts.name }),
          ...(opts.address === undefined ? {} : { address: opts.address }),
          ...(opts.timezone === undefined ? {} : { timezone: opts.timezone }),
        }),
    );
}

/** `spool admin station …`, its device token included. */
export function addStationCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
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
  addDiagnoseCommand(station, ctx);
  const path = readAndDelete(
    station,
    admin,
    'station',
    'stations',
    'station',
    ', its printers and its device token (its unfinished jobs fail)',
  );
  orgList(
    station
      .command('list')
      .description('list stations with online state, last contact and agent version'),
    path,
    STATION_COLUMNS,
    list,
  );
  paged(
    station
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
  const stationUpdate = station
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
      return admin('PATCH', path(opts.org, opts.id), {
        ...(opts.name === undefined ? {} : { name: opts.name }),
        ...(opts.region === undefined ? {} : { region: opts.region }),
        ...(opts.location === false ? { location_id: null } : {}),
        ...(typeof opts.location === 'string' ? { location_id: opts.location } : {}),
      });
    },
  );
}

/** `spool admin template …`. */
export function addTemplateCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
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
          fields: templateFields(opts.field),
        }),
    );
  const path = readAndDelete(template, admin, 'template', 'templates', 'template', '');
  paged(inOrg(template.command('list').description("list an organization's templates"))).action(
    (opts: Page & { org: string }) =>
      list(
        `${path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
        opts.format,
        TEMPLATE_COLUMNS,
      ),
  );

  template
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
      collect,
      [],
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
        admin('PATCH', path(opts.org, opts.id), {
          ...(opts.name === undefined ? {} : { name: opts.name }),
          ...(opts.kind === undefined ? {} : { kind: opts.kind }),
          ...(opts.bodyFile === undefined ? {} : { body: await readFile(opts.bodyFile, 'utf8') }),
          ...(opts.field.length === 0 ? {} : { fields: templateFields(opts.field) }),
        }),
    );
}

/** `spool admin printer …`. */
export function addPrinterCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
  const printer = adminCommand.command('printer').description('printers');
  const path = readAndDelete(
    printer,
    admin,
    'printer',
    'printers',
    'printer',
    ', whatever its status (its unfinished jobs fail)',
  );
  paged(
    inOrg(
      printer
        .command('list')
        .description("list an organization's printers, of one station or location if given")
        .option('--station <id>', 'only the printers of this station')
        .option('--location <id>', 'only the printers in this location'),
    ),
  ).action((opts: Page & { org: string; station?: string; location?: string }) =>
    list(
      `${path(opts.org)}${query({
        station_id: opts.station,
        location_id: opts.location,
        limit: opts.limit,
        cursor: opts.cursor,
      })}`,
      opts.format,
      PRINTER_COLUMNS,
    ),
  );
}
