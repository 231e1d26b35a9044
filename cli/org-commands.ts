/**
 * `spool printers list`, `spool locations list` and `spool key`: what the API key of
 * `SPOOL_API_KEY` can see of its organization, as JSON or with `--format table` a table.
 */
import type { Command } from 'commander';
import type { Location, Printer } from '../client/index.js';
import { type ApiContext, print } from './api-context.js';
import { EXIT, usageExits } from './exits.js';
import { type Format, formatOption, renderTable } from './table.js';

/** Adds `spool printers`, `spool locations` and `spool key` to `program`; returns them. */
export function addOrgCommands(program: Command, { client, run }: ApiContext): Command[] {
  const printers = usageExits(program.command('printers')).description(
    "the organization's printers (SPOOL_API_KEY, SPOOL_URL or --url)",
  );
  printers
    .command('list')
    .description('list printers; prints {printers, next_cursor}')
    .option('--station <id>', 'only the printers of this station')
    .option('--location <id>', 'only the printers at this location')
    .addOption(formatOption())
    .action(
      run(async (opts: { station?: string; location?: string; format: Format }) => {
        const spool = client();
        const query = {
          ...(opts.station === undefined ? {} : { station_id: opts.station }),
          ...(opts.location === undefined ? {} : { location_id: opts.location }),
        };
        const all: Printer[] = [];
        for await (const printer of spool.printers.iterate(query)) all.push(printer);
        print(opts.format, { printers: all, next_cursor: '' }, () =>
          renderTable(
            [
              { header: 'id', value: (p: Printer) => p.id },
              { header: 'name', value: (p: Printer) => p.name },
              { header: 'status', value: (p: Printer) => p.status },
              {
                header: 'station online',
                value: (p: Printer) => (p.station_online ? 'yes' : 'no'),
              },
              { header: 'station', value: (p: Printer) => p.station_id },
              { header: 'detail', value: (p: Printer) => p.detail },
            ],
            all,
          ),
        );
        return EXIT.ok;
      }),
    );

  const locations = usageExits(program.command('locations')).description(
    "the organization's locations (SPOOL_API_KEY, SPOOL_URL or --url)",
  );
  locations
    .command('list')
    .description('list locations; prints {locations, next_cursor}')
    .addOption(formatOption())
    .action(
      run(async (opts: { format: Format }) => {
        const all: Location[] = [];
        for await (const location of client().locations.iterate()) all.push(location);
        print(opts.format, { locations: all, next_cursor: '' }, () =>
          renderTable(
            [
              { header: 'id', value: (l: Location) => l.id },
              { header: 'name', value: (l: Location) => l.name },
              { header: 'address', value: (l: Location) => l.address },
              { header: 'timezone', value: (l: Location) => l.timezone },
            ],
            all,
          ),
        );
        return EXIT.ok;
      }),
    );

  const keyCommand = usageExits(program.command('key'))
    .description('show the API key in SPOOL_API_KEY: its organization, mode and scopes')
    .addOption(formatOption())
    .action(
      run(async (opts: { format: Format }) => {
        const key = await client().key();
        print(opts.format, key, () =>
          renderTable(
            [
              { header: 'id', value: (k: typeof key) => k.id },
              { header: 'org', value: (k: typeof key) => k.org_id },
              { header: 'org name', value: (k: typeof key) => k.org_name },
              { header: 'live', value: (k: typeof key) => k.live },
              { header: 'scopes', value: (k: typeof key) => k.scopes.join(',') },
            ],
            [key],
          ),
        );
        return EXIT.ok;
      }),
    );
  return [printers, locations, keyCommand];
}
