/**
 * The agent's errors that the `spool agent` and `spool-agent` commands tell apart, in a module of
 * their own so that a command reads them without loading the agent.
 */

/**
 * The exit status of an agent whose token the server refused (sysexits' EX_CONFIG). The systemd
 * unit does not restart on it: retrying cannot help until someone puts the current token there.
 */
export const TOKEN_REFUSED_EXIT = 78;

/** The server refused the device token; retrying cannot help. */
export class TokenRefusedError extends Error {
  /** `tokenSource` says where the token came from (`token_file /etc/spool/token`, say). */
  constructor(server: string, details: string, tokenSource = 'the configuration') {
    super(
      `the Spool server at ${server} refused the station token from ${tokenSource} ` +
        `(UNAUTHENTICATED${details ? `: ${details}` : ''}); the agent has stopped, since retrying ` +
        "cannot help: put the station's current token there (spool admin station rotate-token " +
        'makes a new one; a deleted station needs creating again, with its own token), then ' +
        'start the agent again',
    );
    this.name = 'TokenRefusedError';
  }
}
