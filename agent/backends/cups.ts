/**
 * `cups:QUEUE`: prints through the station's CUPS with `lp`, follows the job until CUPS says how it
 * ended, and reads the printer's state with `lpstat` and its capabilities from its IPP attributes. `cups:*`
 * finds every queue with `lpstat -e`. Commands run through `execFile` (never a shell) with `LC_ALL=C`
 * so their output reads the same everywhere.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrinterCapabilities } from '../../gen/spool/v1/stations.js';
import type { Logger } from '../../lib/logger.js';
import { statusOf } from '../ipp/attributes.js';
import type {
  Backend,
  Confirmation,
  PrinterStatus,
  PrinterStatusName,
  PrintJob,
} from './backend.js';
import { HANDED_OFF, messageOf, NotSentError, pause } from './backend.js';
import {
  type CupsServer,
  getJobInfo,
  getQueueCapabilities,
  IppError,
  JOB_STATE,
  STATUS,
} from './cups-ipp.js';

export interface CupsOptions {
  /**
   * The CUPS server (`host[:port]` or a domain socket path), passed to the commands as `-h`. Unset,
   * the commands use CUPS's own default and job states are asked of `/run/cups/cups.sock`, or of
   * `localhost:631` when there is no such socket.
   */
  server?: string;
  /** How often a submitted job's state is asked for (default 1 s). */
  jobPollMs?: number;
  /** How long one command may run (default 30 s). */
  commandTimeoutMs?: number;
  /** How long printer capabilities (the queue's IPP attributes) are kept before they are read again (default 60 s). */
  capabilitiesTtlMs?: number;
  /**
   * The environment the CUPS commands run in (PATH, CUPS_SERVER…); they always get the C locale,
   * whose output the parsers read. Unset, they inherit the agent's.
   */
  env?: Record<string, string | undefined>;
  logger?: Logger;
}

const DEFAULTS = { jobPollMs: 1_000, commandTimeoutMs: 30_000, capabilitiesTtlMs: 60_000 };
const DEFAULT_SOCKET = '/run/cups/cups.sock';

/** The CUPS job number the agent journaled for a job (what `submitted` was given), if any. */
function recordedJob(ref: string | undefined): number | undefined {
  const id = Number(ref);
  return ref && Number.isInteger(id) ? id : undefined;
}

/** A command that failed; the message is its standard error, or what kept it from running. */
export class CupsCommandError extends Error {
  constructor(
    readonly command: string,
    message: string,
  ) {
    super(message);
    this.name = 'CupsCommandError';
  }
}

type Run = (command: string, args: string[]) => Promise<string>;

function commandRunner(options: CupsOptions): Run {
  const timeout = options.commandTimeoutMs ?? DEFAULTS.commandTimeoutMs;
  const serverArgs = options.server === undefined ? [] : ['-h', options.server];
  return (command, args) =>
    new Promise((resolve, reject) => {
      execFile(
        command,
        [...serverArgs, ...args],
        {
          timeout,
          maxBuffer: 4 * 1024 * 1024,
          ...(options.env ? { env: { ...options.env, LC_ALL: 'C', LANG: 'C' } } : {}),
        },
        (error, stdout, stderr) => {
          if (!error) {
            resolve(stdout);
            return;
          }
          const e = error as NodeJS.ErrnoException & { killed?: boolean };
          const why =
            e.code === 'ENOENT'
              ? `${command} is not installed (install cups-client)`
              : e.killed
                ? `${command} did not answer in ${timeout} ms`
                : stderr.trim() || stdout.trim() || e.message;
          reject(new CupsCommandError(command, why));
        },
      );
    });
}

/** The server job states are asked of. */
export function ippServerFor(options: CupsOptions): CupsServer {
  if (options.server !== undefined) return options.server;
  return existsSync(DEFAULT_SOCKET) ? DEFAULT_SOCKET : 'localhost:631';
}

/**
 * The queues of the CUPS server (`lpstat -e`), without instances (`queue/instance`). Throws when
 * the scheduler is not running: `lpstat -e` then lists nothing and succeeds, which would read as
 * every queue removed.
 */
export async function discoverCupsQueues(options: CupsOptions = {}): Promise<string[]> {
  const run = commandRunner(options);
  const out = await run('lpstat', ['-e']);
  const queues = [
    ...new Set(
      out
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.includes('/')),
    ),
  ].sort();
  if (queues.length === 0) {
    const scheduler = (await run('lpstat', ['-r'])).trim();
    if (scheduler !== 'scheduler is running') {
      throw new CupsCommandError('lpstat', `CUPS: ${scheduler || 'the scheduler does not answer'}`);
    }
  }
  return queues;
}

/**
 * What any CUPS queue can do whatever its driver says: CUPS counts copies and applies the page
 * options itself. Paper sizes, duplex and color come from the queue's IPP attributes.
 */
export const CUPS_CAPABILITIES: PrinterCapabilities = {
  paperSizes: [],
  duplex: false,
  color: false,
  copies: true,
  pageOptions: true,
  trays: [],
  documentFormats: [],
};

export function createCupsBackend(queue: string, options: CupsOptions = {}): Backend {
  const run = commandRunner(options);
  const ippServer = ippServerFor(options);
  const jobPollMs = options.jobPollMs ?? DEFAULTS.jobPollMs;
  const capabilitiesTtlMs = options.capabilitiesTtlMs ?? DEFAULTS.capabilitiesTtlMs;
  const logger = options.logger;
  let capabilities: { at: number; value: PrinterCapabilities } | undefined;
  /** lp said the queue is not accepting jobs; status reads ask until it does again. */
  let rejecting = false;

  async function waitForJob(jobId: number, signal?: AbortSignal): Promise<void> {
    const name = `${queue}-${jobId}`;
    for (;;) {
      if (signal?.aborted)
        throw new Error(`cups: the agent stopped while CUPS printed job ${name}`);
      const outcome = await jobOutcome(jobId, name);
      if (outcome === 'printed') return;
      if (outcome !== 'pending') throw new Error(outcome);
      await pause(jobPollMs, signal);
    }
  }

  /** Cancels a CUPS job; false when CUPS refuses (the job completed meanwhile, say). */
  async function cancelJob(name: string): Promise<boolean> {
    try {
      await run('cancel', [name]);
      return true;
    } catch (error) {
      logger?.warn({ queue, cups_job: name, err: messageOf(error) }, 'CUPS did not cancel a job');
      return false;
    }
  }

  /** 'printed', 'pending', or the failure detail. */
  async function jobOutcome(jobId: number, name: string): Promise<string> {
    try {
      const info = await getJobInfo(ippServer, jobId);
      if (info.state === JOB_STATE.completed) return 'printed';
      if (info.state === JOB_STATE.canceled || info.state === JOB_STATE.aborted) {
        const how = info.state === JOB_STATE.canceled ? 'cancelled' : 'aborted';
        const why = [
          info.reasons.filter((r) => r !== 'none' && r !== 'processing-to-stop-point').join(', '),
          info.message,
        ]
          .filter((s) => s !== '')
          .join('; ');
        return `cups: job ${name} was ${how}${why === '' ? '' : ` (${why})`}`;
      }
      return 'pending';
    } catch (error) {
      if (!(error instanceof IppError && error.status === STATUS.notFound)) {
        logger?.warn(
          { queue, job: name, err: messageOf(error) },
          'cannot ask CUPS for the job state over IPP; following the job with lpstat',
        );
      }
    }
    // lpstat lists a job as completed however it ended, so this way a cancelled job reads as printed.
    const open = await run('lpstat', ['-W', 'not-completed', '-o', queue]);
    if (listsJob(open, name)) return 'pending';
    return 'printed';
  }

  return {
    async print(job: PrintJob, signal?: AbortSignal): Promise<Confirmation> {
      const args = lpArguments(queue, job);
      const dir = await mkdtemp(join(tmpdir(), 'spool-agent-'));
      let submitted: { id: number; name: string };
      try {
        const file = join(dir, `job.${extensionFor(job.contentType)}`);
        await writeFile(file, job.document, { mode: 0o600 });
        let out: string;
        try {
          out = await run('lp', [...args, '--', file]);
        } catch (error) {
          const why = messageOf(error);
          // A queue refusing jobs (cupsreject) took nothing: the job waits until it accepts them.
          if (/not accepting jobs/i.test(why)) {
            rejecting = true;
            throw new NotSentError(`cups: ${queue} is not accepting jobs`);
          }
          throw new Error(`cups: lp -d ${queue} failed: ${why}`);
        }
        const id = parseRequestId(out);
        if (id === undefined)
          throw new Error(`cups: cannot read the job id from lp: ${out.trim()}`);
        submitted = { id, name: `${queue}-${id}` };
      } finally {
        // lp has sent the file to the scheduler by the time it exits.
        await rm(dir, { recursive: true, force: true });
      }
      logger?.info({ queue, job: job.id, cups_job: submitted.name }, 'submitted to CUPS');
      await job.submitted?.(String(submitted.id));
      await waitForJob(submitted.id, signal);
      return HANDED_OFF;
    },

    /**
     * After a restart: how the CUPS job ended, and one CUPS still holds (a paused queue, a printer
     * out of paper) is cancelled, so that it prints once, when the job is offered again, rather
     * than later beside a report that it failed.
     */
    async outcome(job) {
      const id = recordedJob(job.ref);
      if (id === undefined) throw new Error('no CUPS job was recorded');
      const name = `${queue}-${id}`;
      const state = await jobOutcome(id, name);
      if (state === 'printed') return HANDED_OFF;
      if (state !== 'pending') return 'not_printed';
      if (!(await cancelJob(name))) {
        // It may have printed between the two questions.
        if ((await jobOutcome(id, name)) === 'printed') return HANDED_OFF;
        throw new Error(`cups: job ${name} could not be cancelled`);
      }
      logger?.warn(
        { queue, job: job.id, cups_job: name },
        'cancelled a CUPS job left waiting by a stop; the job prints when offered again',
      );
      return 'not_printed';
    },

    async cancel(job) {
      const id = recordedJob(job.ref);
      return id === undefined ? false : cancelJob(`${queue}-${id}`);
    },

    async status(): Promise<PrinterStatus> {
      // Asked only once lp was refused: lpstat -p does not say whether a queue accepts jobs.
      if (rejecting) {
        const accepting = await run('lpstat', ['-a', queue]).catch((e: unknown) => messageOf(e));
        const refusal = /not accepting requests[^\n]*\n?\s*(.*)/.exec(accepting);
        if (refusal) {
          const reason = refusal[1]?.trim() ?? '';
          return {
            status: 'offline',
            detail: `not accepting jobs${reason ? `: ${reason}` : ''}`,
            capabilities: await caps(),
          };
        }
        rejecting = false;
      }
      let out: string;
      try {
        out = await run('lpstat', ['-l', '-p', queue]);
      } catch (error) {
        return { ...(await unreachable(run, queue, error)), capabilities: await caps() };
      }
      return { ...parsePrinterStatus(out), capabilities: await caps(), raw: lpstatWords(out) };
    },
  };

  async function caps(): Promise<PrinterCapabilities> {
    const now = Date.now();
    if (capabilities && now - capabilities.at < capabilitiesTtlMs) return capabilities.value;
    let value: PrinterCapabilities;
    try {
      value = await getQueueCapabilities(ippServer, queue);
    } catch (error) {
      // CUPS still handles copies and the page options; the rest is asked again after the TTL.
      logger?.warn({ queue, err: messageOf(error) }, "cannot read the queue's IPP attributes");
      value = CUPS_CAPABILITIES;
    }
    capabilities = { at: now, value };
    return value;
  }
}

async function unreachable(
  run: Run,
  queue: string,
  error: unknown,
): Promise<{ status: PrinterStatusName; detail: string }> {
  // lpstat says "Invalid destination name" both for a missing queue and an unreachable server.
  const scheduler = await run('lpstat', ['-r']).catch((e: unknown) => messageOf(e));
  if (!/scheduler is running/.test(scheduler)) {
    return { status: 'offline', detail: `CUPS is not running: ${scheduler.trim()}` };
  }
  return { status: 'error', detail: `CUPS has no queue ${queue}: ${messageOf(error)}` };
}

function extensionFor(contentType: string): string {
  const type = contentType.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/pdf') return 'pdf';
  if (type === 'text/plain') return 'txt';
  return 'bin';
}

function listsJob(lpstatOutput: string, name: string): boolean {
  return lpstatOutput.split('\n').some((line) => line.split(/\s+/)[0] === name);
}

/** The job number in `request id is QUEUE-123 (1 file(s))`. */
export function parseRequestId(lpOutput: string): number | undefined {
  const m = /request id is \S+-(\d+)\b/.exec(lpOutput);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

const SIDES: Record<string, string> = {
  one_sided: 'one-sided',
  two_sided_long_edge: 'two-sided-long-edge',
  two_sided_short_edge: 'two-sided-short-edge',
};
const COLOR_MODES: Record<string, string> = { color: 'color', monochrome: 'monochrome' };
// IPP orientation-requested: 4 landscape (90°), 5 reverse-landscape (270°), 6 reverse-portrait.
const ORIENTATIONS: Record<number, string> = { 90: '4', 180: '6', 270: '5' };
const WORD = /^[A-Za-z0-9._-]{1,64}$/;
const PAGES = /^\d+(-\d*)?(,\d+(-\d*)?)*$/;

/**
 * The `lp` arguments for a job, before `-- FILE`. Throws an Error (the failure detail) for an
 * option value CUPS cannot take: `lp -o` splits its value at spaces, so only plain words pass.
 */
export function lpArguments(queue: string, job: Omit<PrintJob, 'document'>): string[] {
  const o = job.options;
  const args = [
    '-d',
    queue,
    '-t',
    job.title || `spool job ${job.id}`,
    '-n',
    String(Math.max(1, o.copies || 1)),
  ];
  const option = (what: string, value: string) => {
    if (!WORD.test(value)) throw new Error(`cups: cannot use ${what} ${JSON.stringify(value)}`);
    return value;
  };
  if (o.duplex) {
    const sides = SIDES[o.duplex];
    if (sides === undefined) throw new Error(`cups: unknown duplex ${JSON.stringify(o.duplex)}`);
    args.push('-o', `sides=${sides}`);
  }
  if (o.color) {
    const mode = COLOR_MODES[o.color];
    if (mode === undefined) throw new Error(`cups: unknown color ${JSON.stringify(o.color)}`);
    args.push('-o', `print-color-mode=${mode}`);
  }
  if (o.paper) args.push('-o', `media=${option('paper', o.paper)}`);
  if (o.tray) args.push('-o', `media-source=${option('tray', o.tray)}`);
  if (o.pages) {
    const pages = o.pages.replace(/\s+/g, '');
    if (!PAGES.test(pages)) throw new Error(`cups: cannot read pages ${JSON.stringify(o.pages)}`);
    args.push('-P', pages);
  }
  if (o.fitToPage) args.push('-o', 'fit-to-page');
  if (o.rotate) {
    const orientation = ORIENTATIONS[o.rotate];
    if (orientation === undefined) throw new Error(`cups: cannot rotate by ${o.rotate} degrees`);
    args.push('-o', `orientation-requested=${orientation}`);
  }
  // Raw documents go to the printer untouched; PDF and text are typed and filtered by CUPS.
  if (extensionFor(job.contentType) === 'bin') args.push('-o', 'raw');
  return args;
}

/** What `lpstat -l -p QUEUE` says of the queue's state, on one line, for a diagnosis. */
export function lpstatWords(lpstatOutput: string): string {
  const lines = lpstatOutput.split('\n');
  const alerts = lines.find((l) => l.startsWith('\tAlerts:'))?.trim();
  return [lines[0]?.trim() ?? '', ...(alerts ? [alerts] : [])].filter((s) => s !== '').join('; ');
}

/** Reads `lpstat -l -p QUEUE`. */
export function parsePrinterStatus(lpstatOutput: string): {
  status: PrinterStatusName;
  detail: string;
} {
  const lines = lpstatOutput.split('\n');
  const first = lines[0] ?? '';
  if (!/^printer \S+ /.test(first)) {
    return { status: 'unknown', detail: `cannot read lpstat: ${first.trim()}` };
  }
  const enabled = !/ disabled since /.test(first);
  const printing = / now printing /.test(first);
  // lpstat puts the printer-state-message on the lines between the first and "Form mounted:".
  const messageLines: string[] = [];
  for (const line of lines.slice(1)) {
    if (!line.startsWith('\t') || /^\t(Form mounted|Content types|Description|Alerts):/.test(line))
      break;
    messageLines.push(line.trim());
  }
  const alerts = lines.find((l) => l.startsWith('\tAlerts:'));
  const reasons = alerts
    ? alerts.slice('\tAlerts:'.length).trim().split(/\s+/).filter(Boolean)
    : [];
  return statusOf({
    enabled,
    printing,
    reasons,
    message: messageLines.join(' ').trim(),
    disabled: 'the queue is disabled',
  });
}
