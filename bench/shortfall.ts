/**
 * Whether a scenario ran as designed: as many streams, links, agents and jobs as it asked for, and
 * no more than a few errors. A figure labelled "1,000 streams" that was measured on 20 misleads
 * more than no figure, so a shortfall throws: `npm run bench` stops, names what was asked and what
 * ran, and exits non-zero without writing results.
 */

/** A scenario did not run as designed. */
export class ShortfallError extends Error {
  override name = 'ShortfallError';
}

/** Errors a run may have and still count as designed: one in a thousand, rounded down. */
export const ERRORS_PER_THOUSAND = 1;

/** How many of `attempted` may fail before the run falls short. */
export function fewErrors(attempted: number): number {
  return Math.floor((attempted * ERRORS_PER_THOUSAND) / 1000);
}

const count = (n: number) => n.toLocaleString('en');

const because = (errors: readonly string[] | undefined) =>
  errors?.length ? ` (${[...new Set(errors)].slice(0, 3).join('; ')})` : '';

/**
 * Throws unless every one of `asked` ran: `what` names them as the message should ("fleet: links
 * connected"), `errors` says why some did not.
 */
export function requireAll(
  what: string,
  asked: number,
  ran: number,
  errors?: readonly string[],
): void {
  if (ran >= asked) return;
  throw new ShortfallError(
    `${what}: ${count(ran)} of the ${count(asked)} asked for${because(errors)}`,
  );
}

/** Throws when more of `attempted` failed than {@link fewErrors} allows. */
export function requireFewErrors(
  what: string,
  attempted: number,
  failed: number,
  errors?: readonly string[],
): void {
  const allowed = fewErrors(attempted);
  if (failed <= allowed) return;
  throw new ShortfallError(
    `${what}: ${count(failed)} of ${count(attempted)} failed, more than the ${count(allowed)} ` +
      `allowed (${ERRORS_PER_THOUSAND} in 1,000)${because(errors)}`,
  );
}
