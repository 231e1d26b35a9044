/** A platform's child organizations (docs/platforms.md): create, list, read and delete them. */
import type { Middleware } from 'koa';
import { SpoolError } from '../../lib/errors.js';
import type { Backends } from '../clients.js';
import type { GatewayState } from '../state.js';

type Handler = Middleware<GatewayState>;

const notYet: Handler = () => {
  throw new SpoolError('internal', 'not built yet');
};

export function childV1Handlers(_deps: { backends: Backends }): Record<string, Handler> {
  return {
    'POST /v1/orgs/:org/children': notYet,
    'GET /v1/orgs/:org/children': notYet,
    'GET /v1/orgs/:org/children/:id': notYet,
    'DELETE /v1/orgs/:org/children/:id': notYet,
  };
}
