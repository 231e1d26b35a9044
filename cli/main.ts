/**
 * The `spool` command (see `program.ts` for its commands). This is the one place that reads
 * `process.env`; everything below takes the environment as an argument.
 */
import { TOKEN_REFUSED_EXIT, TokenRefusedError } from '../agent/errors.js';
import { ConfigError } from '../lib/config.js';
import { AdminError } from './admin.js';
import { buildProgram } from './program.js';

try {
  await buildProgram(process.env).parseAsync(process.argv);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`spool: ${err.message}\n`);
  } else if (err instanceof TokenRefusedError) {
    process.stderr.write(`spool agent: ${err.message}\n`);
    process.exit(TOKEN_REFUSED_EXIT);
  } else if (err instanceof AdminError) {
    process.stderr.write(`${err.body}\n`);
    if (err.hint) process.stderr.write(`spool admin: ${err.hint}\n`);
  } else {
    process.stderr.write(`spool: ${(err as Error).message}\n`);
  }
  process.exit(1);
}
