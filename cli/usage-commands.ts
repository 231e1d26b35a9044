/**
 * `spool usage [--from D] [--to D] [--children]`: the organization's figures per UTC day (jobs
 * created, printed and failed, pages, bytes, webhook deliveries), and its child organizations'
 * with `--children`, from the API key of `SPOOL_API_KEY` (scope `jobs:read`; docs/platforms.md).
 */
import type { Command } from 'commander';
import type { UsageDay } from '../client/index.js';
import { type ApiContext, print } from './api-context.js';
import { EXIT, usageExits } from './exits.js';
import { type Format, formatOption, renderTable } from './table.js';

const COLUMNS = [
  { header: 'date', value: (d: UsageDay) => d.date },
  { header: 'org', value: (d: UsageDay) => d.org_id },
  { header: 'created', value: (d: UsageDay) => String(d.jobs_created) },
  { header: 'printed', value: (d: UsageDay) => String(d.jobs_printed) },
  { header: 'failed', value: (d: UsageDay) => String(d.jobs_failed) },
  { header: 'pages', value: (d: UsageDay) => String(d.pages) },
  { header: 'bytes', value: (d: UsageDay) => String(d.bytes) },
  { header: 'deliveries', value: (d: UsageDay) => String(d.webhook_deliveries) },
];

/** Adds `spool usage` to `program`; returns it. */
export function addUsageCommands(program: Command, { client, run }: ApiContext): Command {
  return usageExits(program.command('usage'))
    .description(
      'usage per UTC day: jobs created, printed and failed, pages, bytes and webhook deliveries; prints {items}, one per day and organization (SPOOL_API_KEY, SPOOL_URL or --url)',
    )
    .option('--from <date>', 'the first UTC day, YYYY-MM-DD (default: 29 days before --to)')
    .option('--to <date>', 'the last UTC day, YYYY-MM-DD (default: today)')
    .option('--children', "each child organization's days too")
    .addOption(formatOption())
    .action(
      run(async (opts: { from?: string; to?: string; children?: boolean; format: Format }) => {
        const items = await client().usage({
          ...(opts.from === undefined ? {} : { from: opts.from }),
          ...(opts.to === undefined ? {} : { to: opts.to }),
          ...(opts.children ? { children: true } : {}),
        });
        print(opts.format, { items }, () => renderTable(COLUMNS, items));
        return EXIT.ok;
      }),
    );
}
