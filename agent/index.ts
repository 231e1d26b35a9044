/**
 * The station agent that `spool agent` runs (DESIGN §4 "Station link", docs/station-link.md):
 * it holds the link to the stations service, reports the station's printers, prints the jobs it is
 * offered through its backends, and keeps the journal that makes each job attempt print at most
 * once.
 */
import { mkdir } from 'node:fs/promises';
import type { ChannelCredentials } from '@grpc/grpc-js';
import type { PrinterReport } from '../gen/spool/v1/stations.js';
import { type Clock, systemClock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { whatStopsPrinting } from '../lib/printer-status.js';
import { spoolVersion } from '../lib/version.js';
import type { Backend } from './backends/backend.js';
import type { CupsOptions } from './backends/cups.js';
import { type BackoffOptions, DEFAULT_BACKOFF } from './backoff.js';
import { diagnose, type RecentLog } from './diagnose.js';
import { TokenRefusedError } from './errors.js';
import { JobRunner } from './jobs.js';
import { INTERRUPTED_DETAIL, Journal, type JournalEntry } from './journal.js';
import { serverProblems, startLink } from './link.js';
import type { PrinterEventOptions } from './printer-events.js';
import {
  type BackendSpec,
  type PrinterSpec,
  PrinterSpecError,
  parsePrinterSpec,
} from './printer-spec.js';
import { PrinterSet } from './printers.js';
import { lockStateDir } from './state-lock.js';
import { StatusFile } from './status.js';
import { Updater, type UpdaterOptions } from './update.js';
import { startReport, UpdateFiles } from './update-state.js';

export type { Backend, PrinterStatus, PrintJob } from './backends/backend.js';
export type { AgentStatus } from './status.js';
export type { BackendSpec, PrinterSpec };
export { INTERRUPTED_DETAIL, PrinterSpecError, parsePrinterSpec, TokenRefusedError };

export interface AgentOptions {
  /** The stations service's link listener, `host:port` (STATION_PORT, 7070, in `spool dev`). */
  server: string;
  /** The station's device token, `svc_dev_…`. */
  token: string;
  /** Where the token came from (`SPOOL_DEVICE_TOKEN`, `token_file …`), named if it is refused. */
  tokenSource?: string;
  printers: PrinterSpec[];
  /**
   * Where the journal, the lock that keeps a second agent out and the status file
   * (`status.json`, read by `spool agent status`) live.
   */
  stateDir: string;
  logger: Logger;
  clock?: Clock;
  /** Reported in `hello`; default: the version in package.json. */
  agentVersion?: string;
  /** Reconnect backoff (default 0.5 s doubling to 30 s, full jitter). */
  backoff?: BackoffOptions;
  /** How often printer statuses are read while some printer is not watched (default 5 s). */
  statusIntervalMs?: number;
  /**
   * How often they are read while every printer's server sends its changes (CUPS, IPP printers
   * that take subscriptions) and no job waits for its printer (default 60 s).
   */
  watchedStatusIntervalMs?: number;
  /** Printer events (agent/printer-events.ts): whether and how the agent subscribes. */
  printerEvents?: PrinterEventOptions;
  /** How long one status read may take before the printer reads `unknown` (default 15 s). */
  statusTimeoutMs?: number;
  /** How `cups:` printers reach CUPS (server, poll interval, command timeout). */
  cups?: Omit<CupsOptions, 'logger'>;
  /** How long {@link Agent.stop} lets a job that is printing finish (default 10 s). */
  stopGraceMs?: number;
  /** Channel credentials for the link; default plaintext. */
  credentials?: ChannelCredentials;
  /** Journal upkeep: rewrite after this many lines, drop settled entries after this age. */
  journal?: { compactAfterLines?: number; retentionMs?: number };
  /** Builds a printer's backend; for tests. */
  createBackend?: (spec: BackendSpec) => Backend;
  /** More fields for the start line, such as the configuration file it was read from. */
  describe?: Record<string, unknown>;
  /**
   * Updates for a packaged agent (agent/update.ts): the package's platform, the release key built
   * into it, and how to restart into a version swapped in. Without it the agent does not update.
   */
  updates?: Pick<UpdaterOptions, 'platform' | 'releaseKey' | 'restart' | 'fetch'>;
  /** The agent's last log lines, fed by `logger`, for a diagnosis (agent/diagnose.ts). */
  recentLog?: RecentLog;
}

export interface Agent {
  /** Stops taking jobs, lets a printing job finish (within the grace), closes the link. */
  stop(): Promise<void>;
  /**
   * Settles when the agent has stopped: resolves after {@link stop}; rejects with a
   * {@link TokenRefusedError} (whose message says the token was refused) when the server answers
   * `UNAUTHENTICATED`, since retrying cannot help.
   */
  done: Promise<void>;
}

const DEFAULT_STOP_GRACE_MS = 10_000;

/** Starts the agent; resolves once the journal is loaded and the printers were read once. */
export async function runAgent(options: AgentOptions): Promise<Agent> {
  const { logger } = options;
  const clock = options.clock ?? systemClock;
  if (!options.server) throw new Error('the agent needs the server address (HOST:PORT)');
  const [problem] = serverProblems(options.server);
  if (problem) throw new Error(problem);
  if (!options.token) throw new Error('the agent needs the station token (svc_dev_…)');
  if (options.printers.length === 0) {
    throw new Error('the agent needs at least one printer (NAME=BACKEND)');
  }
  const names = new Set<string>();
  for (const p of options.printers) {
    if (names.has(p.name)) throw new Error(`two printers are named ${JSON.stringify(p.name)}`);
    names.add(p.name);
  }
  const agentVersion = options.agentVersion ?? spoolVersion();
  const noteTrouble = troubleNotes(logger);

  await mkdir(options.stateDir, { recursive: true });
  const lock = await lockStateDir(options.stateDir);

  let journal: Journal;
  let printers: PrinterSet;
  try {
    const opened = await Journal.open(options.stateDir, { clock, logger, ...options.journal });
    journal = opened.journal;
    printers = new PrinterSet({
      specs: options.printers,
      logger,
      cups: options.cups,
      statusIntervalMs: options.statusIntervalMs,
      watchedStatusIntervalMs: options.watchedStatusIntervalMs,
      events: options.printerEvents,
      statusTimeoutMs: options.statusTimeoutMs,
      createBackend: options.createBackend,
    });
    await printers.refresh();
    // A printer that cannot print from the start (a queue that does not exist) is said at once.
    noteTrouble(printers.reports());
    for (const entry of opened.interrupted)
      await settleInterrupted(entry, journal, printers, logger);
  } catch (error) {
    await lock.release();
    throw error;
  }

  const status = new StatusFile({
    stateDir: options.stateDir,
    clock,
    logger,
    agentVersion,
    server: options.server,
    journal,
  });
  status.printers(printers.reports());
  await status.start();
  journal.onRecord(() => status.changed());

  const updateFiles = options.updates ? new UpdateFiles(options.stateDir) : undefined;
  const updateReport = updateFiles
    ? startReport(await updateFiles.read(), agentVersion)
    : undefined;
  if (updateReport) status.update(updateReport);
  const updater = options.updates
    ? new Updater({
        ...options.updates,
        files: updateFiles,
        stateDir: options.stateDir,
        version: agentVersion,
        logger,
        clock,
        report: (update) => {
          status.update(update);
          link.send({ update });
        },
      })
    : undefined;

  let helloReports: PrinterReport[] = [];
  // The runner sends on the link, which hands it the messages: `link` is set before either runs.
  const runner = new JobRunner({
    journal,
    backend: (name) => printers.backend(name),
    send: (message) => link.send(message),
    logger,
    untilPrintable: (name) => printers.untilPrintable(name),
    printable: (name) => printers.printable(name),
    onResult: (result) => {
      if (!result.printed) {
        status.error(`job ${result.jobId} on ${result.printer} failed: ${result.detail}`);
      }
    },
  });
  const link = startLink({
    server: options.server,
    token: options.token,
    tokenSource: options.tokenSource,
    logger,
    clock,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
    credentials: options.credentials,
    hello: () => {
      helloReports = printers.reports();
      return {
        agentVersion,
        printers: helloReports,
        held: runner.held(),
        platform: options.updates?.platform ?? '',
        update: updateReport,
      };
    },
    onWelcome: (welcome, server) => {
      const regions = { home: welcome.homeRegion, server: welcome.serverRegion };
      status.linkUp(server, { id: welcome.stationId, name: welcome.stationName }, regions);
      if (regions.home && regions.server && regions.home !== regions.server) {
        logger.warn(
          { homeRegion: regions.home, serverRegion: regions.server, server },
          'connected outside the station’s home region: jobs still print, but each one crosses regions; point --server at the home region’s address',
        );
      }
      runner.onWelcome(welcome);
      // What the supervisor waits for before it keeps a version just swapped in.
      updateFiles?.markLinked(agentVersion).catch((err: unknown) => {
        logger.warn({ err }, 'could not record the link for the update supervisor');
      });
      // A change between hello and welcome could not be sent then; send it now.
      const reports = printers.reports();
      if (reports !== helloReports) link.send({ printers: { printers: reports } });
    },
    onMessage: (message) => {
      if (message.update) void updater?.offer(message.update);
      else if (message.diagnose) {
        // Said in the log (and so in the next diagnosis): someone read this station's state.
        logger.info(
          { log_lines: message.diagnose.logLines },
          'diagnosis asked over the link: sending the last log lines, printers and versions',
        );
        void diagnose(message.diagnose, {
          recentLog: options.recentLog,
          specs: options.printers,
          reports: () => printers.reports(),
          raw: (name) => printers.raw(name),
          held: () => runner.held().map((h) => journal.get(h.jobId, h.attempt)?.printer ?? ''),
          agentVersion,
          platform: options.updates?.platform,
        }).then(
          (diagnosis) => link.send({ diagnosis }),
          (err: unknown) => logger.warn({ err }, 'could not answer a diagnosis'),
        );
      } else runner.handle(message);
    },
    // The link logs the loss itself, with its reason and when it tries again.
    onDown: () => status.linkDown(),
    onRetry: ({ server, code, details }) =>
      status.error(`station link to ${server}: ${code}${details ? `: ${details}` : ''}`),
  });
  printers.start((reports) => {
    status.printers(reports);
    noteTrouble(reports);
    if (link.send({ printers: { printers: reports } })) {
      logger.info({ printers: reports.map((r) => `${r.name}: ${r.status}`) }, 'printers changed');
    }
  });
  logger.info(
    {
      server: options.server,
      tls: options.credentials !== undefined,
      state_dir: options.stateDir,
      printers: printers.reports().map((r) => r.name),
      agent_version: agentVersion,
      ...options.describe,
    },
    'station agent started',
  );

  const graceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  let stopWork: Promise<void> | undefined;
  const finishWork = () => {
    stopWork ??= (async () => {
      // The runner first: a job waiting for its printer must see the agent stopping (and stay
      // received, to print when offered again), not the printers' waits ending as if it were back.
      await runner.stop(graceMs);
      await printers.stop();
    })();
    return stopWork;
  };
  const teardown = async () => {
    await finishWork();
    await status.stop();
    await journal.close();
    await lock.release();
  };

  const done = link.done.then(
    async () => {
      await teardown();
      logger.info('station agent stopped');
    },
    async (error: unknown) => {
      status.error(error instanceof Error ? error.message : String(error));
      await teardown();
      logger.error({ err: error }, 'station agent stopped');
      throw error;
    },
  );
  // The caller may only ever call stop(); an unheard rejection must not end the process.
  done.catch(() => {});

  return {
    async stop() {
      // Jobs printing finish while the link is still up, so their results can go out.
      await finishWork();
      await link.stop();
      await done.catch(() => {});
    },
    done,
  };
}

/**
 * Says, as a warning, when a printer stops being able to print and why, once per status and
 * reason, and when it can print again; what a station owner alerting on warnings needs to hear.
 */
function troubleNotes(logger: Logger): (reports: readonly PrinterReport[]) => void {
  const stopped = new Map<string, string>();
  return (reports) => {
    for (const r of reports) {
      const trouble = whatStopsPrinting(r.status);
      const before = stopped.get(r.name);
      if (trouble && before !== `${r.status}/${r.detail}`) {
        stopped.set(r.name, `${r.status}/${r.detail}`);
        logger.warn(
          { printer: r.name, status: r.status, detail: r.detail },
          `printer ${r.name} ${trouble}; its jobs wait`,
        );
      } else if (!trouble && before !== undefined) {
        stopped.delete(r.name);
        logger.info({ printer: r.name, status: r.status }, `printer ${r.name} can print again`);
      }
    }
  };
}

/**
 * A job the agent was printing when it stopped: where the backend can tell whether it came out,
 * record that (printed, or back to received so that it prints when offered again); otherwise it
 * stays failed as interrupted, since printing it again could print it twice.
 */
async function settleInterrupted(
  entry: JournalEntry,
  journal: Journal,
  printers: PrinterSet,
  logger: Logger,
): Promise<void> {
  const log = { job_id: entry.jobId, attempt: entry.attempt, printer: entry.printer };
  const outcome = await printers
    .backend(entry.printer)
    ?.outcome?.({ id: entry.jobId, attempt: entry.attempt, ref: entry.ref })
    .catch(() => undefined);
  if (outcome !== undefined && outcome !== 'not_printed') {
    await journal.record(entry.jobId, entry.attempt, 'printed', { confirmation: outcome });
    logger.info(log, 'a job interrupted by a stop had printed; reporting it printed');
  } else if (outcome === 'not_printed') {
    await journal.record(entry.jobId, entry.attempt, 'received');
    logger.info(log, 'a job interrupted by a stop had not printed; it prints when offered again');
  } else {
    logger.warn(log, `job reported failed: ${INTERRUPTED_DETAIL}`);
  }
}
