/** Usage per organization and UTC day (docs/platforms.md): what a platform bills its customers by. */
import type { Middleware } from 'koa';
import { SpoolError } from '../../lib/errors.js';
import type { Backends } from '../clients.js';
import type { GatewayState } from '../state.js';

type Handler = Middleware<GatewayState>;

const notYet: Handler = () => {
  throw new SpoolError('internal', 'not built yet');
};

export function usageV1Handlers(_deps: { backends: Backends }): Record<string, Handler> {
  return {
    'GET /v1/orgs/:org/usage': notYet,
  };
}
