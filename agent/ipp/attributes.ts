/**
 * What IPP printer attributes mean to Spool, one way and the other: a printer's (or a CUPS queue's)
 * `Get-Printer-Attributes` answer as link capabilities and a status, and a job's options as the
 * job template attributes of `Print-Job`.
 */
import type { PrinterCapabilities, PrintOptions } from '../../gen/spool/v1/stations.js';
import type { PrinterStatusName } from '../../lib/printer-status.js';
import {
  type Attribute,
  type Collection,
  integer,
  PRINTER_STATE,
  type Range,
  strings,
  TAG,
  type Value,
} from './protocol.js';

/** The printer attributes the agent asks for: its state, and what its capabilities come from. */
export const PRINTER_ATTRIBUTES = [
  'printer-state',
  'printer-state-reasons',
  'printer-state-message',
  'printer-is-accepting-jobs',
  'media-supported',
  'sides-supported',
  'color-supported',
  'copies-supported',
  'media-source-supported',
  'document-format-supported',
  'page-ranges-supported',
  'orientation-requested-supported',
  'print-scaling-supported',
];

/**
 * PWG media names (PWG 5101.1) and the names Spool's jobs use for them, which are CUPS's: a job
 * asks for `A4` and the printer gets `iso_a4_210x297mm`. A size missing here is reported, and
 * asked for, by its PWG name.
 */
const PAPER_NAMES: [pwg: string, name: string][] = [
  ['iso_a3_297x420mm', 'A3'],
  ['iso_a4_210x297mm', 'A4'],
  ['iso_a5_148x210mm', 'A5'],
  ['iso_a6_105x148mm', 'A6'],
  ['jis_b5_182x257mm', 'B5'],
  ['na_letter_8.5x11in', 'Letter'],
  ['na_legal_8.5x14in', 'Legal'],
  ['na_executive_7.25x10.5in', 'Executive'],
  ['na_ledger_11x17in', 'Tabloid'],
  ['na_index-4x6_4x6in', '4x6'],
  ['iso_dl_110x220mm', 'EnvDL'],
  ['iso_c5_162x229mm', 'EnvC5'],
  ['na_number-10_4.125x9.5in', 'Env10'],
  ['na_monarch_3.875x7.5in', 'EnvMonarch'],
];
const NAME_OF_PWG = new Map(PAPER_NAMES);
const PWG_OF_NAME = new Map(PAPER_NAMES.map(([pwg, name]) => [name.toLowerCase(), pwg]));

/** A PWG media name as jobs name it. */
export function paperName(pwg: string): string {
  return NAME_OF_PWG.get(pwg) ?? pwg;
}

/** The PWG media keyword for a job's `paper` (a name of {@link paperName}'s, or a PWG name). */
export function mediaKeyword(paper: string): string {
  return PWG_OF_NAME.get(paper.toLowerCase()) ?? paper;
}

/**
 * Capabilities from a printer's attributes. `spooler` is true for a CUPS queue, which converts
 * any document it is given and applies page options itself; a device (`ipp:`) takes the formats
 * it lists and the page options it says it supports.
 */
export function capabilitiesOf(
  attributes: Map<string, Value[]>,
  spooler: boolean,
): PrinterCapabilities {
  const sides = strings(attributes, 'sides-supported');
  const copies = attributes.get('copies-supported')?.[0];
  const maxCopies = typeof copies === 'object' && 'upper' in copies ? (copies as Range).upper : 1;
  const pageOptions =
    spooler ||
    (attributes.get('page-ranges-supported')?.[0] === true &&
      (attributes.get('orientation-requested-supported') ?? []).length > 0);
  return {
    paperSizes: unique(strings(attributes, 'media-supported').filter(isSize).map(paperName)),
    duplex: sides.some((s) => s.startsWith('two-sided')),
    color: attributes.get('color-supported')?.[0] === true,
    // A spooler counts copies whatever the printer does; the agent does not print an IPP
    // printer's document again, so a device prints copies only when it says so.
    copies: spooler || maxCopies > 1,
    pageOptions,
    trays: strings(attributes, 'media-source-supported').filter((s) => s !== 'auto'),
    documentFormats: spooler
      ? []
      : strings(attributes, 'document-format-supported').filter(
          (f) => f !== 'application/octet-stream',
        ),
  };
}

/** Custom size ranges (`custom_min_…`, `custom_max_…`) are not sizes a job can name. */
function isSize(media: string): boolean {
  return !media.startsWith('custom_');
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

interface ReasonRule {
  status: PrinterStatusName;
  match: (reason: string) => boolean;
}

// In order of precedence: the first rule any reason matches decides the status. Only reasons that
// stop the printer count (see stopsPrinting).
const REASON_RULES: ReasonRule[] = [
  { status: 'paper_jam', match: (r) => r === 'media-jam' },
  {
    status: 'door_open',
    match: (r) => r === 'door-open' || r === 'cover-open' || r === 'interlock-open',
  },
  { status: 'out_of_paper', match: (r) => r === 'media-empty' || r === 'media-needed' },
  {
    status: 'offline',
    match: (r) =>
      r === 'offline' || r === 'shutdown' || r === 'paused' || r === 'connecting-to-device',
  },
];

/** A state reason without its severity suffix (`media-empty-error` → `media-empty`). */
function baseReason(reason: string): string {
  return reason.replace(/-(error|warning|report)$/, '');
}

/**
 * Whether a state reason stops the printer. IPP (RFC 8011, printer-state-reasons) says a `-warning`
 * or `-report` reason does not: a `media-empty-warning` is one empty tray of several, and the
 * printer prints from the others. A reason without a suffix counts as an error. The exception is
 * `offline-report`, which CUPS's backends set when they cannot reach the printer.
 */
function stopsPrinting(reason: string): boolean {
  return reason === 'offline-report' || !/-(warning|report)$/.test(reason);
}

/**
 * A printer's state as a link status: the state reasons that stop it first (a jam, an open door,
 * no paper, offline), then a stopped printer or disabled queue (offline), any other `-error` reason
 * (error), a job in progress (printing), and otherwise ready. The detail is the raw reasons,
 * warnings included, and the printer message.
 */
export function statusOf(state: {
  enabled: boolean;
  printing: boolean;
  reasons: string[];
  message: string;
  /** The detail of a printer not enabled when it says nothing more. */
  disabled?: string;
  /**
   * The printer puts a reason's severity by its own state, not the condition's (see
   * {@link printerStatusOf}): a paper, jam, door or offline reason then counts whatever its suffix.
   */
  suffixByState?: boolean;
}): { status: PrinterStatusName; detail: string } {
  const reasons = state.reasons.filter((r) => r !== 'none');
  const detail = [reasons.join(', '), state.message].filter((s) => s !== '').join('; ');
  const stopping = (state.suffixByState ? reasons : reasons.filter(stopsPrinting)).map(baseReason);
  for (const rule of REASON_RULES) {
    if (stopping.some(rule.match)) return { status: rule.status, detail };
  }
  if (!state.enabled)
    return { status: 'offline', detail: detail || (state.disabled ?? 'the printer is stopped') };
  if (reasons.some((r) => r.endsWith('-error'))) return { status: 'error', detail };
  return { status: state.printing ? 'printing' : 'ready', detail };
}

/**
 * The status of a printer from its own attributes. IPP Everywhere printers built on CUPS's and
 * PAPPL's printer code (ippeveprinter, the printer applications) suffix every reason by the
 * printer's state: `media-empty-report` while idle and `media-needed-warning` while a job waits
 * for paper, both a printer that prints nothing until someone loads paper. So a device's paper,
 * jam, door and offline reasons count with any suffix.
 */
export function printerStatusOf(attributes: Map<string, Value[]>): {
  status: PrinterStatusName;
  detail: string;
} {
  const state = integer(attributes, 'printer-state');
  return statusOf({
    enabled: state !== PRINTER_STATE.stopped,
    printing: state === PRINTER_STATE.processing,
    reasons: strings(attributes, 'printer-state-reasons'),
    message: strings(attributes, 'printer-state-message')[0] ?? '',
    suffixByState: true,
  });
}

/** The printer's state attributes as it sent them, for a diagnosis. */
export function printerStateWords(attributes: Map<string, Value[]>): string {
  const state = integer(attributes, 'printer-state');
  const name = Object.entries(PRINTER_STATE).find(([, v]) => v === state)?.[0] ?? String(state);
  const message = strings(attributes, 'printer-state-message')[0] ?? '';
  return [
    `printer-state=${name}`,
    `printer-state-reasons=${strings(attributes, 'printer-state-reasons').join(',') || 'none'}`,
    ...(message ? [`printer-state-message=${JSON.stringify(message)}`] : []),
  ].join(' ');
}

// orientation-requested enums by the job's `rotate`.
const ORIENTATIONS: Record<number, number> = { 0: 3, 90: 4, 180: 6, 270: 5 };

/**
 * A job's options as the job template attributes of `Print-Job` (RFC 8011 §5.2, PWG 5100.7).
 * Options the job leaves unset are not sent: the printer's defaults apply.
 */
export function jobTemplate(options: PrintOptions, copies: number): Attribute[] {
  const out: Attribute[] = [];
  if (copies > 1) out.push({ tag: TAG.integer, name: 'copies', values: [copies] });
  if (options.duplex) {
    out.push({ tag: TAG.keyword, name: 'sides', values: [options.duplex.replaceAll('_', '-')] });
  }
  if (options.color) {
    const mode = options.color === 'color' ? 'color' : 'monochrome';
    out.push({ tag: TAG.keyword, name: 'print-color-mode', values: [mode] });
  }
  if (options.tray) {
    // A tray is a member of media-col, which then names the size too, if the job gives one.
    const media: Collection = { 'media-source': [options.tray] };
    if (options.paper) media['media-size-name'] = [mediaKeyword(options.paper)];
    out.push({ tag: TAG.begCollection, name: 'media-col', values: [media] });
  } else if (options.paper) {
    out.push({ tag: TAG.keyword, name: 'media', values: [mediaKeyword(options.paper)] });
  }
  if (options.pages) {
    const ranges = options.pages.split(',').map((part) => {
      const [from, to = from] = part.split('-').map(Number) as [number, number?];
      return { lower: from, upper: to };
    });
    out.push({ tag: TAG.rangeOfInteger, name: 'page-ranges', values: ranges });
  }
  const orientation = options.rotate ? ORIENTATIONS[options.rotate] : undefined;
  if (orientation !== undefined) {
    out.push({ tag: TAG.enum, name: 'orientation-requested', values: [orientation] });
  }
  if (options.fitToPage) out.push({ tag: TAG.keyword, name: 'print-scaling', values: ['fit'] });
  return out;
}
