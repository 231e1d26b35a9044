/**
 * `spool agent printers` and `spool agent test-print`: the printers the configuration gives, as
 * their backends find them, and a test page printed here without going through Spool.
 */
import { execFile } from 'node:child_process';
import { hostname } from 'node:os';
import { messageOf, type PrinterStatus } from '../agent/backends/backend.js';
import { ALL_CUPS_QUEUES, type PrinterSpec } from '../agent/printer-spec.js';
import type { Env } from '../lib/config.js';
import { createLogger } from '../lib/logger.js';
import { whatStopsPrinting } from '../lib/printer-status.js';
import { spoolVersion } from '../lib/version.js';
import { type AgentCommonFlags, agentSettings, printerSet } from './agent-settings.js';

/** One printer as `spool agent printers` shows it. */
export interface PrinterListing {
  name: string;
  backend: string;
  /** The configured printer it came from, for a queue `cups:*` found. */
  discovered_by?: string;
  status: PrinterStatus['status'];
  detail: string;
  capabilities: {
    copies: boolean;
    paper_sizes: string[];
    duplex: boolean;
    color: boolean;
    page_options: boolean;
    trays: string[];
    document_formats: string[];
  };
}

function backendLabel(spec: PrinterSpec['backend']): string {
  switch (spec.kind) {
    case 'file':
      return `file:${spec.dir}`;
    case 'cups':
      return `cups:${spec.queue}`;
    case 'raw':
      return `raw:${spec.host.includes(':') ? `[${spec.host}]` : spec.host}:${spec.port}`;
    case 'ipp':
      return spec.uri;
  }
}

/** `spool agent printers`: every printer the configuration gives, CUPS queues found included. */
export async function listPrinters(flags: AgentCommonFlags, env: Env): Promise<PrinterListing[]> {
  const s = await agentSettings(flags, env);
  const logger = createLogger({ name: 'agent', level: 'silent' });
  const set = printerSet(s, logger);
  await set.refresh();
  const byName = new Map(s.printers.map((p) => [p.name, p]));
  const wildcards = s.printers.filter(
    (p) => p.backend.kind === 'cups' && p.backend.queue === ALL_CUPS_QUEUES,
  );
  const found = set.reports().map((r) => {
    const spec = byName.get(r.name);
    const listing: PrinterListing = {
      name: r.name,
      backend: '',
      status: r.status as PrinterStatus['status'],
      detail: r.detail,
      capabilities: {
        copies: r.capabilities?.copies ?? false,
        paper_sizes: r.capabilities?.paperSizes ?? [],
        duplex: r.capabilities?.duplex ?? false,
        color: r.capabilities?.color ?? false,
        page_options: r.capabilities?.pageOptions ?? false,
        trays: r.capabilities?.trays ?? [],
        document_formats: r.capabilities?.documentFormats ?? [],
      },
    };
    if (spec && !(spec.backend.kind === 'cups' && spec.backend.queue === ALL_CUPS_QUEUES)) {
      listing.backend = backendLabel(spec.backend);
    } else {
      const from =
        wildcards.find((w) => w.name !== '*' && r.name.startsWith(`${w.name}/`)) ??
        wildcards.find((w) => w.name === '*');
      const queue = from && from.name !== '*' ? r.name.slice(from.name.length + 1) : r.name;
      listing.backend = `cups:${queue}`;
      if (from) listing.discovered_by = `${from.name}=cups:*`;
    }
    return listing;
  });
  await set.stop();
  // A cups:* that found nothing says why, rather than vanish from the list.
  const unreachable: PrinterListing[] = [];
  for (const w of wildcards) {
    if (found.some((p) => p.discovered_by === `${w.name}=cups:*`)) continue;
    unreachable.push({
      name: w.name,
      backend: 'cups:*',
      status: 'unknown',
      detail: `no CUPS queues found: ${await cupsScheduler(s.cupsServer, env)}`,
      capabilities: {
        copies: false,
        paper_sizes: [],
        duplex: false,
        color: false,
        page_options: false,
        trays: [],
        document_formats: [],
      },
    });
  }
  return [...found, ...unreachable];
}

/** What `lpstat -r` says of the CUPS scheduler, for a `cups:*` that found no queue. */
function cupsScheduler(server: string | undefined, env: Env): Promise<string> {
  const where = server === undefined ? 'the local CUPS' : `CUPS at ${server}`;
  return new Promise((resolve) => {
    execFile(
      'lpstat',
      [...(server === undefined ? [] : ['-h', server]), '-r'],
      { timeout: 10_000, env: { ...env, LC_ALL: 'C', LANG: 'C' } },
      (error, stdout, stderr) => {
        if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
          resolve('lpstat is not installed (install cups-client)');
        } else {
          const said = (stdout.trim() || stderr.trim() || messageOf(error)).split('\n')[0];
          resolve(said === 'scheduler is running' ? `${where} has no queues` : `${where}: ${said}`);
        }
      },
    );
  });
}

export function formatPrinters(printers: PrinterListing[]): string {
  if (printers.length === 0) return 'no printers found\n';
  const out: string[] = [];
  for (const p of printers) {
    const caps = [
      p.capabilities.copies ? 'copies' : undefined,
      p.capabilities.page_options ? 'page options' : undefined,
      p.capabilities.duplex ? 'duplex' : undefined,
      p.capabilities.color ? 'color' : undefined,
      p.capabilities.paper_sizes.length > 0
        ? `paper ${p.capabilities.paper_sizes.join(', ')}`
        : undefined,
      p.capabilities.trays.length > 0 ? `trays ${p.capabilities.trays.join(', ')}` : undefined,
      p.capabilities.document_formats.length > 0
        ? `formats ${p.capabilities.document_formats.join(', ')}`
        : undefined,
    ].filter((c) => c !== undefined);
    out.push(`${p.name}`);
    out.push(
      `  backend:      ${p.backend}${p.discovered_by ? ` (found by ${p.discovered_by})` : ''}`,
    );
    out.push(`  status:       ${p.status}${p.detail ? `: ${p.detail}` : ''}`);
    out.push(`  capabilities: ${caps.length > 0 ? caps.join('; ') : 'none'}`);
  }
  return `${out.join('\n')}\n`;
}

/** The page `test-print` sends: plain text, which every backend takes. */
export function testPage(printer: string, backend: string, at: Date): Buffer {
  return Buffer.from(
    [
      'Spool test page',
      '',
      `printer: ${printer}`,
      `backend: ${backend}`,
      `station: ${hostname()}`,
      `agent:   ${spoolVersion()}`,
      `time:    ${at.toISOString()}`,
      '',
      'If you can read this, the agent can print to this printer.',
      '',
    ].join('\n'),
  );
}

/** `spool agent test-print PRINTER`: prints a test page through the printer's backend, here. */
export async function testPrint(
  printer: string,
  flags: AgentCommonFlags,
  env: Env,
): Promise<{ printer: string; backend: string; job: string }> {
  const s = await agentSettings(flags, env);
  const logger = createLogger({ name: 'agent', level: 'silent' });
  const listing = await listPrinters(flags, env);
  const found = listing.find((p) => p.name === printer);
  if (!found) {
    throw new Error(
      `no printer named ${JSON.stringify(printer)}; the printers are: ${listing.map((p) => p.name).join(', ') || 'none'}`,
    );
  }
  const set = printerSet(s, logger);
  await set.refresh();
  const backend = set.backend(printer);
  if (!backend) throw new Error(`the printer ${JSON.stringify(printer)} went away`);
  // A page for a printer that cannot print would wait (in CUPS's queue, say) with no word.
  const report = set.reports().find((r) => r.name === printer);
  const trouble = report && whatStopsPrinting(report.status);
  if (trouble) {
    await set.stop();
    throw new Error(
      `${printer} ${trouble}${report.detail ? ` (${report.detail})` : ''}: no test page was sent; try again once it is ready`,
    );
  }
  const at = new Date();
  const job = `test-page-${at.getTime()}`;
  const { PrintOptions } = await import('../gen/spool/v1/stations.js');
  await backend.print({
    id: job,
    attempt: 1,
    title: 'Spool test page',
    contentType: 'text/plain',
    document: testPage(printer, found.backend, at),
    options: PrintOptions.fromPartial({ copies: 1 }),
  });
  await set.stop();
  return { printer, backend: found.backend, job };
}
