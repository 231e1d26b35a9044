/**
 * The integrator's commands: `spool jobs …`, `spool printers list`, `spool locations list`,
 * `spool stations enroll`, `spool orgs children …`, `spool usage` and `spool key`, built on
 * @spool/client with the API key of `SPOOL_API_KEY` against `SPOOL_URL` (acting on the
 * organization `SPOOL_ORG`, a child of the key's, when set). They print JSON by default (the
 * API's answer) and a table with `--format table`. Exit codes for scripts: 0 done (for `--wait`
 * and `watch`: printed), 1 an API error or a job that failed or was cancelled, 2 wrong usage.
 */
import type { Command } from 'commander';
import type { Env } from '../lib/config.js';
import { createApiContext } from './api-context.js';
import { addChildOrgCommands } from './child-org-commands.js';
import { addEnrollmentCommands } from './enrollment-commands.js';
import { addJobsCommands } from './jobs-commands.js';
import { addOrgCommands } from './org-commands.js';
import { addUsageCommands } from './usage-commands.js';

/**
 * Adds the integrator's commands to `program`. `env` is read when a command runs:
 * `SPOOL_API_KEY` (required), `SPOOL_URL` (default http://localhost:8080) and `SPOOL_ORG` (the
 * key's own organization unless set).
 */
export function addApiCommands(program: Command, env: Env): void {
  const ctx = createApiContext(env);
  const jobs = addJobsCommands(program, ctx);
  for (const top of [
    jobs,
    ...addOrgCommands(program, ctx),
    addEnrollmentCommands(program, ctx),
    addChildOrgCommands(program, ctx),
    addUsageCommands(program, ctx),
  ]) {
    ctx.addUrlFlag(top);
  }
}
