/**
 * The ceilings' process (`bench/run.ts` forks it): each ceiling runs here, apart from the servers
 * it measures and from the harness, as Spool's load does.
 */
import { jetstreamPublishRate } from './ceilings/jetstream.js';
import { pgInsertRate } from './ceilings/pg-insert.js';
import { undiciHmacRate } from './ceilings/undici-hmac.js';
import { serve } from './ipc.js';

const handlers = { pgInsertRate, jetstreamPublishRate, undiciHmacRate };

export type CeilingsApi = typeof handlers;

serve(handlers);
