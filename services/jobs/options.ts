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

/**
 * Refuses an option `printer` cannot honour, naming the option and what the printer can do, and a
 * document of a type the printer does not take, when `contentType` is given.
 */
export function checkOptionsFor(
  options: PrintOptions,
  printer: Printer,
  contentType?: string,
): void {
  const caps = printer.capabilities;
  const name = JSON.stringify(printer.name);
  const refuse = (option: string, why: string) => {
    throw invalid(`printer ${name} ${why}; leave out options.${option}`, `options.${option}`);
  };
  if (options.copies > 1 && !caps?.copies) refuse('copies', 'cannot print copies');
  if (options.duplex.startsWith('two_sided') && !caps?.duplex) {
    refuse('duplex', 'prints on one side only');
  }
  if (options.color === 'color' && !caps?.color) refuse('color', 'prints in monochrome only');
  const layout = {
    paper: options.paper,
    tray: options.tray,
    pages: options.pages,
    fit_to_page: options.fitToPage,
    rotate: options.rotate,
  };
  for (const [option, value] of Object.entries(layout)) {
    if (value && !caps?.pageOptions) {
      refuse(option, 'prints each document as it is (a file or raw printer), without page options');
    }
  }
  const trays = caps?.trays ?? [];
  if (options.tray && trays.length > 0 && !trays.includes(options.tray)) {
    refuse('tray', `has no tray ${JSON.stringify(options.tray)}; it has ${trays.join(', ')}`);
  }
  const formats = caps?.documentFormats ?? [];
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (type && formats.length > 0 && !formats.includes(type)) {
    throw invalid(
      `printer ${name} does not take ${type} documents; it takes ${formats.join(', ')}`,
      'content',
    );
  }
  const sizes = caps?.paperSizes ?? [];
  if (options.paper && sizes.length > 0) {
    const wanted = options.paper.toLowerCase();
    if (!sizes.some((s) => s.toLowerCase() === wanted)) {
      refuse('paper', `has no paper ${JSON.stringify(options.paper)}; it has ${sizes.join(', ')}`);
    }
  }
}
