/** Station enrollment codes (docs/platforms.md): a one-use code a station's agent turns into its device token. */
import type { Middleware } from 'koa';
import { SpoolError } from '../../lib/errors.js';
import type { Backends } from '../clients.js';
import type { GatewayState } from '../state.js';

type Handler = Middleware<GatewayState>;

const notYet: Handler = () => {
  throw new SpoolError('internal', 'not built yet');
};

export function enrollmentV1Handlers(_deps: { backends: Backends }): Record<string, Handler> {
  return {
    'POST /v1/orgs/:org/enrollments': notYet,
  };
}
