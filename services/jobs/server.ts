/**
 * The jobs gRPC service: creates jobs from every kind of content (storing the document in the
 * object store first), answers job queries, applies the API's actions through the state machine,
 * and keeps uploads, templates and Idempotency-Key records. Each role's calls are answered in
 * their own file of handlers/; this puts them together.
 */
import type { JobsServiceServer } from '../../gen/spool/v1/jobs.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { actionHandlers } from './handlers/actions.js';
import { creationHandlers } from './handlers/creation.js';
import type { JobsServerDeps } from './handlers/deps.js';
import { documentHandlers } from './handlers/documents.js';
import { idempotencyHandlers } from './handlers/idempotency-keys.js';
import { poolHandlers } from './handlers/pools.js';
import { purgeHandlers } from './handlers/purge.js';
import { queryHandlers } from './handlers/queries.js';
import { routingHandlers } from './handlers/routing.js';
import { templateHandlers } from './handlers/templates.js';
import { uploadHandlers } from './handlers/uploads.js';
import { usageHandlers } from './handlers/usage.js';
import { validationHandlers } from './handlers/validation.js';

export type { JobsServerDeps, ServerKeys } from './handlers/deps.js';

export function createJobsServer(deps: JobsServerDeps): AsyncServer<JobsServiceServer> {
  return {
    ...creationHandlers(deps),
    ...documentHandlers(deps),
    ...queryHandlers(deps),
    ...actionHandlers(deps),
    ...uploadHandlers(deps),
    ...templateHandlers(deps),
    ...idempotencyHandlers(deps),
    ...purgeHandlers(deps),
    ...poolHandlers(deps),
    ...routingHandlers(deps),
    ...validationHandlers(deps),
    ...usageHandlers(deps),
  };
}
