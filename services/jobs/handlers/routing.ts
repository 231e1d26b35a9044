/** Routing a job: moving it to another printer, and a station's claim of a pool job. */
import { SpoolError } from '../../../lib/errors.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function routingHandlers(_deps: JobsServerDeps): JobsHandlers<'moveJob' | 'claimJob'> {
  const todo = async (): Promise<never> => {
    throw new SpoolError('internal', 'routing is not built yet');
  };
  return { moveJob: todo, claimJob: todo };
}
