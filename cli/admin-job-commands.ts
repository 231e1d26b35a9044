/** `spool admin job …` and `spool admin audit`: an organization's jobs and the audit log, for support. */
import type { Command } from 'commander';
import type { AdminContext } from './admin.js';
import { enc, inOrg, type Page, paged, query } from './admin-options.js';
import { AUDIT_COLUMNS, JOB_COLUMNS } from './admin-tables.js';

/** `spool admin job list` and `job get`. */
export function addJobCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin, list } = ctx;
  const job = adminCommand.command('job').description("an organization's jobs, for support");
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
}

/** `spool admin audit`: the audit log, newest first. */
export function addAuditCommand(adminCommand: Command, ctx: AdminContext): void {
  const { list } = ctx;
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
