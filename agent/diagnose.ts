/**
 * The agent's answer to a diagnosis (docs/agent.md, "Diagnosis"): its last log lines, its printers
 * as its backends see them, and its versions, within {@link MAX_REPORT_BYTES}. Nothing secret goes
 * in: the log lines are those pino wrote after its redaction, scrubbed again of anything shaped
 * like a Spool credential or a URL's user and password; a printer's target loses its user,
 * password, query and fragment.
 */
import { execFile } from 'node:child_process';
import { release } from 'node:os';
import type { DestinationStream } from 'pino';
import {
  DiagnoseReport,
  type DiagnoseRequest,
  type PrinterDiagnosis,
  type PrinterReport,
} from '../gen/spool/v1/stations.js';
import { ALL_CUPS_QUEUES, type BackendSpec, type PrinterSpec } from './printer-spec.js';

/** The most log lines the agent keeps, and sends. */
export const RECENT_LOG_LINES = 200;
/** A longer log line is cut to this many characters. */
export const MAX_LOG_LINE = 8_192;
/**
 * The encoded report's ceiling: under NATS's default 1 MiB payload, with room for the headers and
 * the envelope it crosses the bus in.
 */
export const MAX_REPORT_BYTES = 960 * 1024;

const CREDENTIAL = /svc_(?:live|test|dev|sess|inv)_[A-Za-z0-9_-]+/g;
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/\s"'@]*@/gi;

/** `text` with anything shaped like a credential, or a URL's user and password, taken out. */
export function scrubSecrets(text: string): string {
  return text.replace(CREDENTIAL, '[redacted]').replace(USERINFO, '$1');
}

/**
 * The agent's last {@link RECENT_LOG_LINES} log lines, in memory. {@link tee} makes the pino
 * destination that feeds it: the agent's logger writes through it, so the lines kept are exactly
 * the lines written, redacted as they were.
 */
export class RecentLog {
  readonly #capacity: number;
  readonly #lines: string[] = [];

  constructor(capacity = RECENT_LOG_LINES) {
    this.#capacity = capacity;
  }

  add(line: string): void {
    const text = line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line;
    this.#lines.push(text);
    if (this.#lines.length > this.#capacity) this.#lines.shift();
  }

  /** The last `count` lines, oldest first. */
  lines(count: number = this.#capacity): string[] {
    return count <= 0 ? [] : this.#lines.slice(-count);
  }

  /** A destination that keeps each line and passes it on to `next` (if any). */
  tee(next?: DestinationStream): DestinationStream {
    return {
      write: (chunk: string) => {
        for (const line of chunk.split('\n')) if (line !== '') this.add(line);
        next?.write(chunk);
      },
    };
  }
}

/** `backend` as a diagnosis names it: its kind and target, with no credentials. */
export function describeBackend(backend: BackendSpec): string {
  switch (backend.kind) {
    case 'file':
      return `file:${backend.dir}`;
    case 'cups':
      return `cups:${backend.queue}`;
    case 'raw':
      return `raw:${backend.host.includes(':') ? `[${backend.host}]` : backend.host}:${backend.port}`;
    case 'ipp':
      return withoutCredentials(backend.uri);
  }
}

function withoutCredentials(uri: string): string {
  try {
    const url = new URL(uri);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    return scrubSecrets(uri);
  }
}

/** The backend of reported printer `name`: its spec's, or for a `cups:*` spec, the queue found. */
function backendOf(specs: readonly PrinterSpec[], name: string): BackendSpec | undefined {
  for (const { name: specName, backend } of specs) {
    if (backend.kind === 'cups' && backend.queue === ALL_CUPS_QUEUES) {
      const prefix = specName === '*' ? '' : `${specName}/`;
      if (name.startsWith(prefix) && name.length > prefix.length) {
        return { kind: 'cups', queue: name.slice(prefix.length) };
      }
    } else if (specName === name) {
      return backend;
    }
  }
  return undefined;
}

export interface DiagnosisSources {
  recentLog?: RecentLog;
  specs: readonly PrinterSpec[];
  /** The printers as last read. */
  reports: () => readonly PrinterReport[];
  /** Printer names of the jobs the agent holds unfinished. */
  held: () => readonly string[];
  agentVersion: string;
  platform?: string;
}

/** Answers `request` from what the agent knows now. */
export async function diagnose(
  request: DiagnoseRequest,
  sources: DiagnosisSources,
): Promise<DiagnoseReport> {
  const count = Math.min(Math.max(request.logLines || RECENT_LOG_LINES, 0), RECENT_LOG_LINES);
  const heldBy = new Map<string, number>();
  for (const printer of sources.held()) heldBy.set(printer, (heldBy.get(printer) ?? 0) + 1);
  const printers: PrinterDiagnosis[] = sources.reports().map((r) => {
    const backend = backendOf(sources.specs, r.name);
    return {
      name: r.name,
      backend: backend ? describeBackend(backend) : '',
      status: r.status,
      detail: scrubSecrets(r.detail),
      capabilities: r.capabilities,
      raw: '',
      heldJobs: heldBy.get(r.name) ?? 0,
    };
  });
  const versions: Record<string, string> = {
    agent: sources.agentVersion,
    node: process.versions.node,
    platform: sources.platform || `${process.platform}_${process.arch}`,
    os: `${process.platform} ${release()}`,
  };
  if (sources.specs.some((s) => s.backend.kind === 'cups')) {
    const cups = await cupsVersion();
    if (cups) versions.cups = cups;
  }
  return capped({
    requestId: request.requestId,
    logLines: (sources.recentLog?.lines(count) ?? []).map(scrubSecrets),
    printers,
    versions,
    truncated: false,
  });
}

/**
 * `report`, its oldest log lines left out (then its last printers) until it encodes within
 * {@link MAX_REPORT_BYTES}; `truncated` says when anything was.
 */
export function capped(report: DiagnoseReport, limit = MAX_REPORT_BYTES): DiagnoseReport {
  let size = DiagnoseReport.encode(report).finish().length;
  if (size <= limit) return report;
  const lines = [...report.logLines];
  const printers = [...report.printers];
  while (size > limit && (lines.length > 0 || printers.length > 0)) {
    let over = size - limit;
    while (over > 0 && lines.length > 0) over -= Buffer.byteLength(lines.shift() as string) + 3;
    if (over > 0 && lines.length === 0) printers.pop();
    size = DiagnoseReport.encode({ ...report, logLines: lines, printers }).finish().length;
  }
  return { ...report, logLines: lines, printers, truncated: true };
}

/** The CUPS client's version (`cups-config --version`), or undefined when it cannot be read. */
function cupsVersion(): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('cups-config', ['--version'], { timeout: 2_000 }, (error, stdout) => {
      const version = String(stdout).trim();
      resolve(error || !/^[0-9][0-9A-Za-z.+-]{0,31}$/.test(version) ? undefined : version);
    });
  });
}
