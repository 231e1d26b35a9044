/**
 * `spool orgs children create|list|get|delete`: a platform's child organizations, one for each of
 * its customers, managed with the API key of `SPOOL_API_KEY` (scopes `orgs:read`, `orgs:write`;
 * docs/platforms.md). To act on a child with the same key, the other commands take `SPOOL_ORG`.
 */
import type { Command } from 'commander';
import type { ChildOrg } from '../client/index.js';
import { type ApiContext, print } from './api-context.js';
import { EXIT, UsageError, usageExits } from './exits.js';
import { type Format, formatOption, renderTable } from './table.js';

const COLUMNS = [
  { header: 'id', value: (o: ChildOrg) => o.id },
  { header: 'name', value: (o: ChildOrg) => o.name },
  { header: 'reference', value: (o: ChildOrg) => o.reference },
  { header: 'created', value: (o: ChildOrg) => o.created_at },
];

/** Adds `spool orgs` to `program`; returns it. */
export function addChildOrgCommands(program: Command, { client, run }: ApiContext): Command {
  const orgs = usageExits(program.command('orgs')).description(
    "the key's organization and its child organizations (SPOOL_API_KEY, SPOOL_URL or --url)",
  );
  const children = orgs
    .command('children')
    .description("a platform's child organizations: one for each of its customers");

  children
    .command('create')
    .description('create a child organization; prints {org}')
    .requiredOption('--name <name>', 'its name, 1 to 200 characters')
    .option('--reference <reference>', 'your own reference for it, such as a customer number')
    .addOption(formatOption())
    .action(
      run(async (opts: { name: string; reference?: string; format: Format }) => {
        const org = await client().children.create({
          name: opts.name,
          ...(opts.reference === undefined ? {} : { reference: opts.reference }),
        });
        print(opts.format, { org }, () => renderTable(COLUMNS, [org]));
        return EXIT.ok;
      }),
    );

  children
    .command('list')
    .description('list child organizations, oldest first; prints {items, next_cursor}')
    .option('--reference <reference>', 'only those with exactly this reference')
    .addOption(formatOption())
    .action(
      run(async (opts: { reference?: string; format: Format }) => {
        const query = opts.reference === undefined ? {} : { reference: opts.reference };
        const all: ChildOrg[] = [];
        for await (const org of client().children.iterate(query)) all.push(org);
        print(opts.format, { items: all, next_cursor: '' }, () => renderTable(COLUMNS, all));
        return EXIT.ok;
      }),
    );

  children
    .command('get')
    .description('show a child organization; prints {org}')
    .argument('<id>', 'the child organization id')
    .addOption(formatOption())
    .action(
      run(async (id: string, opts: { format: Format }) => {
        const org = await client().children.get(id);
        print(opts.format, { org }, () => renderTable(COLUMNS, [org]));
        return EXIT.ok;
      }),
    );

  children
    .command('delete')
    .description(
      'delete a child organization and everything it has: keys, stations, printers, locations, jobs and their documents, templates, webhook endpoints and deliveries; prints {deleted: true, id}',
    )
    .argument('<id>', 'the child organization id')
    .option('--yes', 'yes, delete it: this cannot be undone')
    .action(
      run(async (id: string, opts: { yes?: boolean }) => {
        if (!opts.yes) {
          throw new UsageError(
            'deleting an organization cannot be undone; add --yes to delete it and everything it has',
          );
        }
        await client().children.delete(id);
        process.stdout.write(`${JSON.stringify({ deleted: true, id }, null, 2)}\n`);
        return EXIT.ok;
      }),
    );
  return orgs;
}
