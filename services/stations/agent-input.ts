/**
 * What a station's agent sends, checked before any of it is stored or published. A station is a
 * computer outside the operator's hands: one that sends nonsense (a bug, or someone holding its
 * token) must not fail the group commits it shares with other stations' links, stall the region's
 * reports with a message that can never apply, or fill the database.
 *
 * Ids and counts that no agent of Spool sends are refused, closing the link with the reason.
 * Free text (a printer's or a failure's detail) is cleaned and shortened instead: it comes from
 * CUPS or a printer and is only ever shown.
 */

import type { AgentHello, PrinterReport } from '../../gen/spool/v1/stations.js';
import { isUuid } from '../../lib/ids.js';
import { LINK_PRINTER_STATUSES } from '../../lib/printer-status.js';

/** Printers one station may report. */
export const MAX_PRINTERS = 1000;
/** A printer's name: the agent's NAME (64) or a CUPS prefix and queue name (64 + 1 + 127). */
export const MAX_PRINTER_NAME = 200;
/** Characters of a printer's or a failed job's detail that are kept. */
export const MAX_DETAIL = 1000;
/** Jobs an agent may say it holds in its hello. */
export const MAX_HELD = 10_000;
const MAX_PAPER_SIZES = 64;
const MAX_PAPER_SIZE = 64;
const MAX_AGENT_VERSION = 100;

const KNOWN_STATUSES: ReadonlySet<string> = new Set(LINK_PRINTER_STATUSES);
// PostgreSQL refuses NUL in text; the others would only garble a log line or a page.
const CONTROL = /\p{Cc}+/gu;

/** Something an agent sent that no agent of Spool sends: the link is closed, saying this. */
export class AgentInputError extends Error {}

/** `value` without control characters, at most `max` characters (an ellipsis ends a cut one). */
export function cleanText(value: string, max: number): string {
  let clean = value.replace(CONTROL, ' ');
  if (clean.length <= max) return clean;
  clean = clean.slice(0, max - 1);
  // Never half of a surrogate pair.
  if (/[\ud800-\udbff]$/.test(clean)) clean = clean.slice(0, -1);
  return `${clean}…`;
}

/** Refuses a job reference that cannot name a job: a `job_id` not a UUID, an attempt below 1. */
export function checkJobRef(what: string, jobId: string, attempt: number): void {
  if (!isUuid(jobId)) {
    throw new AgentInputError(
      `${what}: job_id ${JSON.stringify(jobId.slice(0, 40))} is not a job id`,
    );
  }
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new AgentInputError(`${what}: attempt ${attempt} of job ${jobId} is not 1 or more`);
  }
}

/**
 * The printers as they can be stored: each name checked (present, at most
 * {@link MAX_PRINTER_NAME}, no control characters, once), a status Spool does not know read as
 * `unknown` (an agent newer than the server), detail and paper sizes cleaned and bounded.
 */
export function checkPrinters(printers: PrinterReport[]): PrinterReport[] {
  if (printers.length > MAX_PRINTERS) {
    throw new AgentInputError(
      `${printers.length} printers reported; a station may have at most ${MAX_PRINTERS}`,
    );
  }
  const names = new Set<string>();
  return printers.map((p) => {
    if (p.name === '' || p.name.length > MAX_PRINTER_NAME || /\p{Cc}/u.test(p.name)) {
      throw new AgentInputError(
        `printer name ${JSON.stringify(p.name.slice(0, 40))} is empty, over ${MAX_PRINTER_NAME} characters or has control characters`,
      );
    }
    if (names.has(p.name)) {
      throw new AgentInputError(`printer name ${JSON.stringify(p.name)} is reported twice`);
    }
    names.add(p.name);
    const capabilities = p.capabilities && {
      ...p.capabilities,
      paperSizes: p.capabilities.paperSizes
        .slice(0, MAX_PAPER_SIZES)
        .map((size) => cleanText(size, MAX_PAPER_SIZE))
        .filter((size) => size.trim() !== ''),
    };
    return {
      ...p,
      status: KNOWN_STATUSES.has(p.status) ? p.status : 'unknown',
      detail: cleanText(p.detail, MAX_DETAIL),
      ...(capabilities ? { capabilities } : {}),
    };
  });
}

/** The hello as it can be used: its held jobs and printers checked, its version cleaned. */
export function checkHello(hello: AgentHello): AgentHello {
  if (hello.held.length > MAX_HELD) {
    throw new AgentInputError(
      `${hello.held.length} held jobs in hello; an agent may name at most ${MAX_HELD}`,
    );
  }
  for (const held of hello.held) checkJobRef('hello', held.jobId, held.attempt);
  return {
    ...hello,
    agentVersion: cleanText(hello.agentVersion, MAX_AGENT_VERSION),
    printers: checkPrinters(hello.printers),
  };
}
