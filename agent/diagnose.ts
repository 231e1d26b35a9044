/**
 * The agent's answer to a diagnosis (docs/agent.md, "Diagnosis"): its last log lines, its printers
 * as its backends see them, and its versions, within the cap of lib/contracts/diagnosis.ts.
 * Nothing secret goes in: the log lines are those pino wrote after its redaction, scrubbed again
 * of anything shaped like a Spool credential or a URL's user and password; a printer's target
 * loses its user, password, query and fragment.
 */
import { execFile } from 'node:child_process';
import { release } from 'node:os';
import type { DestinationStream } from 'pino';
import type {
  DiagnoseReport,
  DiagnoseRequest,
  PrinterDiagnosis,
  PrinterReport,
} from '../gen/spool/v1/stations.js';
import {
  capped,
  MAX_DIAGNOSIS_LOG_LINES,
  MAX_LOG_LINE,
  scrubSecrets,
} from '../lib/contracts/diagnosis.js';
import { ALL_CUPS_QUEUES, type BackendSpec, type PrinterSpec } from './printer-spec.js';

/**
 * The agent's last {@link MAX_DIAGNOSIS_LOG_LINES} log lines, in memory. {@link tee} makes the pino
 * destination that feeds it: the agent's logger writes through it, so the lines kept are exactly
 * the lines written, redacted as they were.
 */
export class RecentLog {
  readonly #capacity: number;
  readonly #lines: string[] = [];

  constructor(capacity = MAX_DIAGNOSIS_LOG_LINES) {
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
      return scrubSecrets(`file:${backend.dir}`);
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
  /** A printer's backend's own words for its state, as last read ('' when it has none). */
  raw?: (name: string) => string;
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
  const count = Math.min(
    Math.max(request.logLines || MAX_DIAGNOSIS_LOG_LINES, 0),
    MAX_DIAGNOSIS_LOG_LINES,
  );
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
      raw: scrubSecrets(sources.raw?.(r.name) ?? ''),
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

/** The CUPS client's version (`cups-config --version`), or undefined when it cannot be read. */
function cupsVersion(): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('cups-config', ['--version'], { timeout: 2_000 }, (error, stdout) => {
      const version = String(stdout).trim();
      resolve(error || !/^[0-9][0-9A-Za-z.+-]{0,31}$/.test(version) ? undefined : version);
    });
  });
}
