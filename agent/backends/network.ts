/**
 * Network errors in words. A printer's detail is read in the console by whoever looks after the
 * printer, so a refused or unreachable printer says what that means; the error code stays in
 * brackets, for searching.
 */

const WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'nothing takes connections on that port (ECONNREFUSED)',
  ECONNRESET: 'the printer broke off the connection (ECONNRESET)',
  ECONNABORTED: 'the connection was broken off (ECONNABORTED)',
  EPIPE: 'the printer closed the connection while it was being sent to (EPIPE)',
  ETIMEDOUT: 'the printer did not answer in time (ETIMEDOUT)',
  EHOSTUNREACH: 'the printer cannot be reached: it is off or not on the network (EHOSTUNREACH)',
  EHOSTDOWN: 'the printer cannot be reached: it is off or not on the network (EHOSTDOWN)',
  ENETUNREACH: "the station has no route to the printer's network (ENETUNREACH)",
  ENOTFOUND: "the printer's name is not known to DNS (ENOTFOUND)",
  EAI_AGAIN: "the printer's name could not be looked up just now (EAI_AGAIN)",
};

/** What went wrong reaching a printer, in words: a known error code explained, else the error. */
export function networkProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && WORDS[code] !== undefined) return WORDS[code];
  if (code !== undefined) return code;
  return error instanceof Error ? error.message : String(error);
}
