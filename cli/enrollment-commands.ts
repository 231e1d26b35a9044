/**
 * `spool stations enroll --name N`: a one-use enrollment code for a station, made with the API key
 * of `SPOOL_API_KEY` (scope `stations:write`). The station's installer then runs
 * `spool agent enroll --server HOST:PORT CODE` (docs/agent.md), and no token is typed anywhere.
 */
import type { Command } from 'commander';
import type { Enrollment } from '../client/index.js';
import { type ApiContext, positiveInt, print } from './api-context.js';
import { EXIT, usageExits } from './exits.js';
import { type Format, formatOption, renderTable } from './table.js';

/** Adds `spool stations` to `program`; returns it. */
export function addEnrollmentCommands(program: Command, { client, run }: ApiContext): Command {
  const stations = usageExits(program.command('stations')).description(
    "the organization's stations (SPOOL_API_KEY, SPOOL_URL or --url)",
  );
  stations
    .command('enroll')
    .description(
      'make a one-use enrollment code for a new station; prints {enrollment} with its code, shown this once',
    )
    .requiredOption('--name <name>', 'the name of the station the code makes')
    .option('--location <id>', 'the location the station will be in')
    .option(
      '--expires-in <seconds>',
      'how long the code can be used, 60 to 2592000 seconds (default 86400: 24 hours)',
      positiveInt,
    )
    .addOption(formatOption())
    .action(
      run(async (opts: { name: string; location?: string; expiresIn?: number; format: Format }) => {
        const enrollment = await client().enrollments.create({
          station_name: opts.name,
          ...(opts.location === undefined ? {} : { location_id: opts.location }),
          ...(opts.expiresIn === undefined ? {} : { expires_in: opts.expiresIn }),
        });
        print(opts.format, { enrollment }, () =>
          renderTable(
            [
              { header: 'code', value: (e: Enrollment) => e.code ?? '' },
              { header: 'station', value: (e: Enrollment) => e.station_name },
              { header: 'location', value: (e: Enrollment) => e.location_id ?? '' },
              { header: 'expires', value: (e: Enrollment) => e.expires_at },
            ],
            [enrollment],
          ),
        );
        return EXIT.ok;
      }),
    );
  return stations;
}
