/** An organization's pools of printers: create, list, read, change and delete them. */
import { SpoolError } from '../../../lib/errors.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function poolHandlers(
  _deps: JobsServerDeps,
): JobsHandlers<'createPool' | 'listPools' | 'getPool' | 'updatePool' | 'deletePool'> {
  const todo = async (): Promise<never> => {
    throw new SpoolError('internal', 'pools are not built yet');
  };
  return { createPool: todo, listPools: todo, getPool: todo, updatePool: todo, deletePool: todo };
}
