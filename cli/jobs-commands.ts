/**
 * `spool jobs …`: create, list, follow and act on print jobs with the API key of `SPOOL_API_KEY`.
 * They print JSON by default (the API's answer) and a table with `--format table`; `--wait` and
 * `watch` exit 0 once the job printed and 1 if it failed or was cancelled.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { type Command, Option } from 'commander';
import {
  type CreateJobRequest,
  isFinished,
  type Job,
  JobNotPrintedError,
  type JobStatus,
  type Spool,
  WaitTimeoutError,
} from '../client/index.js';
import { type ApiContext, positiveInt, print } from './api-context.js';
import { EXIT, UsageError, usageExits } from './exits.js';
import { type Format, formatOption, renderTable, writePage } from './table.js';

const JOB_COLUMNS = [
  { header: 'id', value: (j: Job) => j.id },
  // As wide as the longest status (`scheduled`, `cancelled`), for `jobs watch`'s rows.
  { header: 'status', value: (j: Job) => j.status, minWidth: 9 },
  { header: 'title', value: (j: Job) => j.title },
  { header: 'reference', value: (j: Job) => j.reference },
  { header: 'printer', value: (j: Job) => j.printer_id },
  { header: 'created', value: (j: Job) => j.created_at },
  { header: 'detail', value: (j: Job) => j.status_detail },
];

function printJob(format: Format, job: Job): void {
  print(format, { job }, () => renderTable(JOB_COLUMNS, [job]));
}

type PrintOptions = NonNullable<CreateJobRequest['options']>;

/** The print options `jobs create` takes as flags. */
interface PrintFlags {
  copies?: number;
  duplex?: PrintOptions['duplex'];
  color?: PrintOptions['color'];
  paper?: string;
  tray?: string;
  pages?: string;
  fitToPage?: boolean;
  rotate?: string;
}

/** The job's `options` from the flags given; the API checks them against the printer. */
function printOptions(f: PrintFlags): PrintOptions {
  return {
    ...(f.copies === undefined ? {} : { copies: f.copies }),
    ...(f.duplex === undefined ? {} : { duplex: f.duplex }),
    ...(f.color === undefined ? {} : { color: f.color }),
    ...(f.paper === undefined ? {} : { paper: f.paper }),
    ...(f.tray === undefined ? {} : { tray: f.tray }),
    ...(f.pages === undefined ? {} : { pages: f.pages }),
    ...(f.fitToPage ? { fit_to_page: true } : {}),
    ...(f.rotate === undefined ? {} : { rotate: Number(f.rotate) as PrintOptions['rotate'] }),
  };
}

/** A job's content from FILE (by its extension) or from --text. */
async function contentFrom(file: string | undefined, text: string | undefined) {
  if ((file === undefined) === (text === undefined)) {
    throw new UsageError('give either FILE or --text TEXT');
  }
  if (text !== undefined) return { type: 'text' as const, data: text };
  const bytes = await readFile(file as string).catch((error: NodeJS.ErrnoException) => {
    // "ENOENT: no such file or directory, open 'x.pdf'" says less than the file and the reason.
    const reason = error.code === 'ENOENT' ? 'there is no such file' : error.message;
    throw new Error(`cannot read ${file}: ${reason}`);
  });
  const ext = extname(file as string).toLowerCase();
  if (ext === '.pdf') return { type: 'pdf_base64' as const, data: bytes.toString('base64') };
  if (ext === '.txt' || ext === '.text')
    return { type: 'text' as const, data: bytes.toString('utf8') };
  // Anything else goes to the printer as it is: ZPL, ESC/POS, PCL, PostScript.
  return { type: 'raw_base64' as const, data: bytes.toString('base64') };
}

/**
 * One line on stderr per change of status or detail while waiting, so stdout stays the job's JSON.
 */
function progress(job: Job): void {
  const detail = job.status_detail ? ` (${job.status_detail})` : '';
  process.stderr.write(`spool: job ${job.id} ${job.status}${detail}\n`);
}

const FAILED: ReadonlySet<JobStatus> = new Set(['failed', 'cancelled']);

/** Adds `spool jobs` and its commands to `program`. */
export function addJobsCommands(program: Command, ctx: ApiContext): Command {
  const jobs = usageExits(program.command('jobs')).description(
    'print jobs: create, list, follow (SPOOL_API_KEY, SPOOL_URL or --url)',
  );
  addCreateCommand(jobs, ctx);
  addReadCommands(jobs, ctx);
  addActionCommands(jobs, ctx);
  return jobs;
}

/** `spool jobs create`, and with `--wait` its wait until printed. */
function addCreateCommand(jobs: Command, { client, run }: ApiContext): void {
  jobs
    .command('create')
    .description('create a print job; prints {job}; with --wait, once it printed')
    .argument('[file]', 'the document: .pdf as PDF, .txt as text, anything else sent as it is')
    .option('--printer <id>', 'the printer id (spool printers list)')
    .option('--pool <id>', 'instead of --printer: a pool of printers, whose member Spool chooses')
    .option(
      '--priority <n>',
      'from 1 to 100 (default 50): of the jobs waiting for one printer, the highest goes first',
      positiveInt,
    )
    .option('--text <text>', 'print this text instead of a file')
    .option('--copies <n>', 'copies, 1 to 999', positiveInt)
    .addOption(
      new Option('--duplex <sides>', 'two-sided printing').choices([
        'one_sided',
        'two_sided_long_edge',
        'two_sided_short_edge',
      ]),
    )
    .addOption(new Option('--color <mode>', 'color or monochrome').choices(['color', 'monochrome']))
    .option('--paper <size>', "a paper size the printer lists, such as A4 (its 'capabilities')")
    .option('--tray <tray>', 'the tray to take paper from')
    .option('--pages <ranges>', 'only these pages, such as 1-3,5')
    .option('--fit-to-page', 'scale each page to the paper')
    .addOption(
      new Option('--rotate <degrees>', 'turn each page').choices(['0', '90', '180', '270']),
    )
    .option('--hold', 'create it held: it prints once released (spool jobs retry ID)')
    .option('--schedule-at <time>', 'queue it at this RFC 3339 time, such as 2026-05-01T08:00:00Z')
    .option(
      '--expire-after <seconds>',
      'fail it as expired if still queued this long after it started waiting',
      positiveInt,
    )
    .option('--title <title>', 'a title to recognise the job by')
    .option('--reference <ref>', 'your reference, such as an order number (a list filter)')
    .option('--idempotency-key <key>', 'the same key and job within 24 hours make one job')
    .option('--wait', 'wait until printed: exit 0 once printed, 1 if it failed or was cancelled')
    .option(
      '--timeout <seconds>',
      'with --wait, give up after this many seconds (exit 1)',
      positiveInt,
    )
    .addOption(formatOption())
    .action(
      run(
        async (
          file: string | undefined,
          opts: {
            printer?: string;
            pool?: string;
            priority?: number;
            text?: string;
            title?: string;
            reference?: string;
            idempotencyKey?: string;
            hold?: boolean;
            scheduleAt?: string;
            expireAfter?: number;
            wait?: boolean;
            timeout?: number;
            format: Format;
          } & PrintFlags,
        ) => {
          if ((opts.printer === undefined) === (opts.pool === undefined)) {
            throw new UsageError('give either --printer ID or --pool ID');
          }
          const options = printOptions(opts);
          const body: CreateJobRequest = {
            ...(opts.printer === undefined ? {} : { printer_id: opts.printer }),
            ...(opts.pool === undefined ? {} : { pool_id: opts.pool }),
            ...(opts.priority === undefined ? {} : { priority: opts.priority }),
            content: await contentFrom(file, opts.text),
            ...(opts.title === undefined ? {} : { title: opts.title }),
            ...(opts.reference === undefined ? {} : { reference: opts.reference }),
            ...(Object.keys(options).length === 0 ? {} : { options }),
            ...(opts.hold ? { hold: true } : {}),
            ...(opts.scheduleAt === undefined ? {} : { schedule_at: opts.scheduleAt }),
            ...(opts.expireAfter === undefined ? {} : { expire_after: opts.expireAfter }),
          };
          const spool = client();
          const job = await spool.jobs.create(body, {
            ...(opts.idempotencyKey === undefined ? {} : { idempotencyKey: opts.idempotencyKey }),
          });
          if (!opts.wait) {
            printJob(opts.format, job);
            return EXIT.ok;
          }
          return waitAndPrint(spool, job.id, opts.format, opts.timeout);
        },
      ),
    );
}

/** `spool jobs list` and `jobs get`. */
function addReadCommands(jobs: Command, { client, run }: ApiContext): void {
  jobs
    .command('list')
    .description('list jobs, newest first; prints {items, next_cursor, counts}')
    .option('--status <status>', 'only these statuses, a comma list (queued,sent)')
    .option('--printer <id>', 'only jobs for this printer')
    .option('--reference <ref>', 'only jobs with this reference')
    .option('--station <id>', 'only jobs for printers of this station')
    .option('--created-after <time>', 'only jobs created after this RFC 3339 time')
    .option('--created-before <time>', 'only jobs created before this RFC 3339 time')
    .option(
      '--limit <n>',
      'at most this many jobs (1-200 a page; more are paged through)',
      positiveInt,
    )
    .option('--cursor <cursor>', 'next_cursor of a previous list')
    .addOption(formatOption())
    .action(
      run(
        async (opts: {
          status?: string;
          printer?: string;
          reference?: string;
          station?: string;
          createdAfter?: string;
          createdBefore?: string;
          limit?: number;
          cursor?: string;
          format: Format;
        }) => {
          const spool = client();
          const limit = opts.limit ?? 50;
          // The server checks each (a bad one answers 400 naming it, exit 1).
          const filters = {
            ...(opts.status === undefined ? {} : { status: opts.status }),
            ...(opts.printer === undefined ? {} : { printer_id: opts.printer }),
            ...(opts.reference === undefined ? {} : { reference: opts.reference }),
            ...(opts.station === undefined ? {} : { station_id: opts.station }),
            ...(opts.createdAfter === undefined ? {} : { created_after: opts.createdAfter }),
            ...(opts.createdBefore === undefined ? {} : { created_before: opts.createdBefore }),
          };
          // Pages of at most 200 are read until --limit jobs are in hand, each asking only for
          // what is still wanted, so that the last page's next_cursor continues right after them.
          const items: Job[] = [];
          let answer = { items, next_cursor: '', counts: {} as Record<string, number> };
          let cursor = opts.cursor ?? '';
          do {
            const page = await spool.jobs.list({
              ...filters,
              limit: Math.min(limit - items.length, 200),
              ...(cursor ? { cursor } : {}),
            });
            items.push(...page.items);
            answer = { items, next_cursor: page.next_cursor, counts: page.counts };
            cursor = page.next_cursor;
          } while (cursor !== '' && items.length < limit);
          writePage(opts.format, answer, JOB_COLUMNS);
          return EXIT.ok;
        },
      ),
    );

  jobs
    .command('get')
    .description('show a job and its events; prints {job, events}')
    .argument('<id>', 'job id')
    .addOption(formatOption())
    .action(
      run(async (id: string, opts: { format: Format }) => {
        const answer = await client().jobs.get(id);
        print(
          opts.format,
          answer,
          () =>
            `${renderTable(JOB_COLUMNS, [answer.job])}\n${renderTable(
              [
                { header: 'at', value: (e: (typeof answer.events)[number]) => e.at },
                { header: 'status', value: (e: (typeof answer.events)[number]) => e.status },
                { header: 'actor', value: (e: (typeof answer.events)[number]) => e.actor },
                { header: 'detail', value: (e: (typeof answer.events)[number]) => e.detail },
              ],
              answer.events,
            )}`,
        );
        return EXIT.ok;
      }),
    );
}

/** `spool jobs cancel`, `retry`, `reprint`, `move` and `watch`. */
function addActionCommands(jobs: Command, { client, run }: ApiContext): void {
  for (const [name, description] of [
    ['cancel', 'cancel a scheduled, held, queued or sent job; prints {job}'],
    ['retry', 'queue a failed or held job again; prints {job}'],
    ['reprint', 'print a job again as a new job with the same document; prints the new {job}'],
  ] as const) {
    jobs
      .command(name)
      .description(description)
      .argument('<id>', 'job id')
      .addOption(formatOption())
      .action(
        run(async (id: string, opts: { format: Format }) => {
          const spool = client();
          const job =
            name === 'cancel'
              ? await spool.jobs.cancel(id)
              : name === 'retry'
                ? await spool.jobs.retry(id)
                : await spool.jobs.reprint(id);
          printJob(opts.format, job);
          return EXIT.ok;
        }),
      );
  }

  jobs
    .command('move')
    .description(
      'send a queued, scheduled or held job to another printer of the organization; prints {job}',
    )
    .argument('[id]', 'job id (or --id)')
    .option('--id <id>', 'job id')
    .requiredOption('--printer <id>', 'the printer to move it to')
    .addOption(formatOption())
    .action(
      run(
        async (arg: string | undefined, opts: { id?: string; printer: string; format: Format }) => {
          if ((arg === undefined) === (opts.id === undefined)) {
            throw new UsageError('give the job id once, as ID or --id ID');
          }
          const id = (arg ?? opts.id) as string;
          printJob(opts.format, await client().jobs.move(id, { printer_id: opts.printer }));
          return EXIT.ok;
        },
      ),
    );

  jobs
    .command('watch')
    .description(
      'print the job at each change of status or detail until it finishes: exit 0 printed, 1 failed or cancelled',
    )
    .argument('<id>', 'job id')
    .addOption(formatOption())
    .action(
      run(async (id: string, opts: { format: Format }) => {
        let last: Job | undefined;
        let first = true;
        for await (const job of client().jobs.watch(id)) {
          last = job;
          if (opts.format === 'json') {
            // One JSON line per change, for line-oriented scripts.
            process.stdout.write(`${JSON.stringify({ job })}\n`);
          } else {
            const table = renderTable(JOB_COLUMNS, [job]);
            process.stdout.write(first ? table : table.slice(table.indexOf('\n') + 1));
          }
          first = false;
        }
        return last && isFinished(last) && !FAILED.has(last.status) ? EXIT.ok : EXIT.failed;
      }),
    );
}

/** `--wait`: progress on stderr, the job on stdout, 0 once printed and 1 otherwise. */
async function waitAndPrint(
  spool: Spool,
  id: string,
  format: Format,
  timeoutSeconds: number | undefined,
): Promise<number> {
  try {
    const job = await spool.waitForJob(id, {
      until: 'printed',
      onChange: progress,
      ...(timeoutSeconds === undefined ? {} : { timeoutMs: timeoutSeconds * 1000 }),
    });
    printJob(format, job);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof JobNotPrintedError || err instanceof WaitTimeoutError) {
      if (err.job) printJob(format, err.job);
      process.stderr.write(`spool: ${err.message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
}
