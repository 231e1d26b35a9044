/**
 * Print options checked against what they ask and against the printer they go to: an option the
 * printer cannot honour is refused when the job is created, never dropped on the way. Copies are
 * honoured by every printer the agent drives (it prints a document again where the printer cannot
 * count copies itself), so only printers that report no copies at all refuse them.
 */
import type { Printer, PrintOptions } from '../../gen/spool/v1/stations.js';
import { invalid } from '../../lib/errors.js';

/** Checks `pages` (`1-3,5`): page numbers from 1, each range from low to high. */
export function checkPages(pages: string): void {
  if (!pages) return;
  for (const part of pages.split(',')) {
    const [from, to = from] = part.split('-').map(Number) as [number, number?];
    if (!Number.isInteger(from) || !Number.isInteger(to)) {
      throw invalid(
        `options.pages must be page ranges such as 1-3,5; ${JSON.stringify(part)} is not one`,
        'options.pages',
      );
    }
    if (from < 1) {
      throw invalid(`options.pages: pages are numbered from 1, not ${from}`, 'options.pages');
    }
    if (to < from) {
      throw invalid(
        `options.pages: the range ${part} runs backwards; write it from low to high (${to}-${from})`,
        'options.pages',
      );
    }
  }
}

/** Why a printer cannot print a job: the message, and the field of the request it names. */
export interface Refusal {
  message: string;
  param: string;
}

/**
 * Why `printer` cannot honour `options`, naming the option and what the printer can do, or a
 * document of a type it does not take, when `contentType` is given; undefined when it can. Routing
 * asks this of every member of a pool for every job, so it builds nothing unless it refuses.
 */
export function optionsRefusal(
  options: PrintOptions,
  printer: Printer,
  contentType?: string,
): Refusal | undefined {
  const caps = printer.capabilities;
  if (options.copies > 1 && !caps?.copies) return refusal(printer, 'copies', 'cannot print copies');
  if (options.duplex.startsWith('two_sided') && !caps?.duplex) {
    return refusal(printer, 'duplex', 'prints on one side only');
  }
  if (options.color === 'color' && !caps?.color) {
    return refusal(printer, 'color', 'prints in monochrome only');
  }
  const layout = caps?.pageOptions ? undefined : layoutOption(options);
  if (layout) {
    return refusal(
      printer,
      layout,
      'prints each document as it is (a file or raw printer), without page options',
    );
  }
  const trays = caps?.trays ?? [];
  if (options.tray && trays.length > 0 && !trays.includes(options.tray)) {
    return refusal(
      printer,
      'tray',
      `has no tray ${JSON.stringify(options.tray)}; it has ${trays.join(', ')}`,
    );
  }
  const formats = caps?.documentFormats ?? [];
  if (contentType && formats.length > 0) {
    const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
    if (type && !formats.includes(type)) {
      return {
        message: `printer ${JSON.stringify(printer.name)} does not take ${type} documents; it takes ${formats.join(', ')}`,
        param: 'content',
      };
    }
  }
  const sizes = caps?.paperSizes ?? [];
  if (options.paper && sizes.length > 0) {
    const wanted = options.paper.toLowerCase();
    if (!sizes.some((s) => s.toLowerCase() === wanted)) {
      return refusal(
        printer,
        'paper',
        `has no paper ${JSON.stringify(options.paper)}; it has ${sizes.join(', ')}`,
      );
    }
  }
  return undefined;
}

/** The first page option `options` sets, by its name in the API. */
function layoutOption(options: PrintOptions): string | undefined {
  if (options.paper) return 'paper';
  if (options.tray) return 'tray';
  if (options.pages) return 'pages';
  if (options.fitToPage) return 'fit_to_page';
  if (options.rotate) return 'rotate';
  return undefined;
}

function refusal(printer: Printer, option: string, why: string): Refusal {
  return {
    message: `printer ${JSON.stringify(printer.name)} ${why}; leave out options.${option}`,
    param: `options.${option}`,
  };
}

/** Refuses, as `invalid_request`, an option or document `printer` cannot honour. */
export function checkOptionsFor(
  options: PrintOptions,
  printer: Printer,
  contentType?: string,
): void {
  const refused = optionsRefusal(options, printer, contentType);
  if (refused) throw invalid(refused.message, refused.param);
}
