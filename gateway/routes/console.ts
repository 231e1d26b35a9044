/**
 * The console's own HTTP endpoints under `/console/v1` (docs/console-api.md): sign-in and sign-out,
 * the session, invitations, people, keys, stations, locations, the overview and the organization's
 * settings.
 * Everything but sign-in and invitations needs a signed-in session (the `spool_session` cookie);
 * state-changing requests also need the CSRF token, and each organization's route the role the
 * table of docs/console-api.md gives.
 */
import { Router } from '@koa/router';
import type { GatewayState } from '../state.js';
import { fleetRoutes } from './console-fleet.js';
import { type ConsoleDeps, consoleKit } from './console-kit.js';
import { locationRoutes } from './console-locations.js';
import { orgRoutes } from './console-org.js';
import { peopleRoutes } from './console-people.js';
import { signInRoutes } from './console-sign-in.js';

export type { ConsoleDeps } from './console-kit.js';
export { AcceptBody, SignInBody } from './console-sign-in.js';

export function consoleRouter(deps: ConsoleDeps): Router<GatewayState> {
  const kit = consoleKit(new Router<GatewayState>({ prefix: '/console/v1' }), deps);
  signInRoutes(kit);
  peopleRoutes(kit);
  fleetRoutes(kit);
  locationRoutes(kit);
  orgRoutes(kit);
  return kit.router;
}
