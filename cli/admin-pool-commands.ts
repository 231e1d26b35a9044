/**
 * `spool admin pool …`: an organization's pools of printers, which jobs name with `pool_id`
 * instead of one printer. Each command prints the JSON the gateway answers.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { POOL_STRATEGIES } from '../lib/contracts/pools.js';
import type { AdminContext } from './admin.js';
import { enc, inOrg, type Page, paged, query } from './admin-options.js';
import { POOL_COLUMNS } from './admin-tables.js';
import { collect } from './flags.js';

/** A whole number of seconds, 0 included (0: never fail over); Spool checks the upper bound. */
function seconds(raw: string): number {
  if (!/^\d{1,9}$/.test(raw.trim())) {
    throw new InvalidArgumentError('give a whole number of seconds, 0 for never');
  }
  return Number(raw);
}

/** The members flags of a pool: `--printer` (repeatable) and `--printers` (a comma list). */
interface MemberFlags {
  printer: string[];
  printers?: string;
}

const withMembers = (cmd: Command, what: string) =>
  cmd
    .option('--printer <id>', `${what}; repeatable, in order`, collect, [])
    .option('--printers <ids>', `${what}s as a comma list, in order (instead of --printer)`);

/** The members given, in order, or undefined for none; both flags at once are wrong usage. */
function members(opts: MemberFlags, command: Command): string[] | undefined {
  if (opts.printers !== undefined && opts.printer.length > 0) {
    command.error('error: give either --printer ID (repeatable) or --printers A,B, not both', {
      exitCode: 2,
    });
  }
  if (opts.printers !== undefined) return opts.printers.split(',').map((id) => id.trim());
  return opts.printer.length > 0 ? opts.printer : undefined;
}

const strategyOption = () =>
  new Option(
    '--strategy <strategy>',
    'least_queued: the member with the fewest unfinished jobs; ordered: the first that can print',
  ).choices(POOL_STRATEGIES);

const failoverOption = () =>
  new Option(
    '--failover-after <seconds>',
    "seconds a chosen printer may stay unable to print before its jobs move to another member (0 never; Spool's default 30)",
  ).argParser(seconds);

type PoolFlags = MemberFlags & { name?: string; strategy?: string; failoverAfter?: number };

/** The body of a create or update from the flags given. */
function poolBody(opts: PoolFlags, printerIds: string[] | undefined) {
  return {
    ...(opts.name === undefined ? {} : { name: opts.name }),
    ...(printerIds === undefined ? {} : { printer_ids: printerIds }),
    ...(opts.strategy === undefined ? {} : { strategy: opts.strategy }),
    ...(opts.failoverAfter === undefined ? {} : { failover_after: opts.failoverAfter }),
  };
}

/** `spool admin pool create|list|get|update|delete`. */
export function addPoolCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
  const pool = adminCommand
    .command('pool')
    .description('pools of printers, which jobs name instead of one printer');
  const path = (org: string, id?: string) =>
    `/orgs/${enc(org)}/pools${id === undefined ? '' : `/${enc(id)}`}`;

  withMembers(
    pool
      .command('create')
      .description('create a pool of printers; prints {pool}')
      .requiredOption('--org <org>', 'organization id')
      .requiredOption('--name <name>', 'the pool name'),
    'a member printer id',
  )
    .addOption(strategyOption())
    .addOption(failoverOption())
    .action((opts: PoolFlags & { org: string }, command: Command) => {
      const printerIds = members(opts, command);
      if (printerIds === undefined) {
        command.error('error: give the members with --printer ID (repeatable) or --printers A,B', {
          exitCode: 2,
        });
      }
      return admin('POST', path(opts.org), poolBody(opts, printerIds));
    });

  paged(
    inOrg(pool.command('list').description("list an organization's pools, oldest first")),
  ).action((opts: Page & { org: string }) =>
    list(
      `${path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
      opts.format,
      POOL_COLUMNS,
    ),
  );

  pool
    .command('get')
    .description('show a pool; prints {pool}')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'pool id')
    .action((opts: { org: string; id: string }) => admin('GET', path(opts.org, opts.id)));

  withMembers(
    pool
      .command('update')
      .description("change a pool's name, members, strategy or failover; prints {pool}")
      .requiredOption('--org <org>', 'organization id')
      .requiredOption('--id <id>', 'pool id')
      .option('--name <name>', 'a new name'),
    'a member printer id, replacing all the members',
  )
    .addOption(strategyOption())
    .addOption(failoverOption())
    .action((opts: PoolFlags & { org: string; id: string }, command: Command) => {
      const body = poolBody(opts, members(opts, command));
      if (Object.keys(body).length === 0) {
        command.error(
          'error: nothing to change: give at least one of --name, --printer, --printers, --strategy, --failover-after',
          { exitCode: 2 },
        );
      }
      return admin('PATCH', path(opts.org, opts.id), body);
    });

  pool
    .command('delete')
    .description(
      'delete a pool (refused while jobs of it wait for a member; jobs already routed keep their printer); prints {deleted: true, id}',
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <id>', 'pool id')
    .action((opts: { org: string; id: string }) =>
      admin('DELETE', path(opts.org, opts.id), undefined, { deleted: true, id: opts.id }),
    );
}
