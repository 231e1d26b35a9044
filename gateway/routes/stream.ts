/**
 * `GET /v1/orgs/{org}/stream`: the organization's events as Server-Sent Events (DESIGN §5
 * Realtime). Authentication, organization and scope (`jobs:read`) are checked by the `/v1` chain
 * before this handler; everything after the headers is gateway/event-stream.ts.
 */
import type { Context, Middleware } from 'koa';
import { EVENT_READERS } from '../../lib/contracts/event-types.js';
import type { Scope } from '../../lib/credentials.js';
import { forbidden, isSpoolError, SpoolError } from '../../lib/errors.js';
import { STREAM_EVENT_TYPES } from '../../lib/events.js';
import { type KeyAuthOptions, requireScope } from '../auth.js';
import type { EventStreams } from '../event-stream.js';
import { parseEventId } from '../event-stream.js';
import { type QuerySpec, readQuery, single } from '../query.js';
import { requireKeyOrSession, type SessionOptions } from '../session-auth.js';
import type { GatewayState } from '../state.js';
import { orgOf } from './context.js';

type Handler = Middleware<GatewayState>;

/** The scope a stream needs, in the route table and again for as long as it is open. */
export const STREAM_SCOPE: Scope = 'jobs:read';

/** Answers that say the credential no longer allows the stream, as a new request would get. */
const REFUSALS = new Set(['unauthorized', 'forbidden', 'not_found']);

/**
 * Whether the request's key or session still allows its stream: the same authentication and
 * authorisation a new request to the route passes (rate limit aside), run again on the headers the
 * stream was opened with. A check that fails for another reason (the accounts service restarting)
 * allows the stream.
 */
function stillAllowed(
  ctx: Context & { state: GatewayState },
  auth: Handler[],
): () => Promise<boolean> {
  return async () => {
    const probe = Object.create(ctx) as Context & { state: GatewayState };
    probe.state = { requestId: ctx.state.requestId };
    const run = (i: number): Promise<void> =>
      i === auth.length
        ? Promise.resolve()
        : Promise.resolve((auth[i] as Handler)(probe, () => run(i + 1)));
    try {
      await run(0);
      return true;
    } catch (err) {
      return !(isSpoolError(err) && REFUSALS.has(err.code));
    }
  };
}

/** `types=job.printed,job.failed`: a set of known types, or undefined for all. */
export function parseTypes(text: string | undefined): ReadonlySet<string> | undefined {
  if (text === undefined) return undefined;
  const types = text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (types.length === 0)
    throw new SpoolError('invalid', 'types names no event type', { param: 'types' });
  for (const t of types) {
    if (!(STREAM_EVENT_TYPES as readonly string[]).includes(t)) {
      throw new SpoolError(
        'invalid',
        `unknown event type ${JSON.stringify(t.slice(0, 64))}; types are ${STREAM_EVENT_TYPES.join(', ')}`,
        { param: 'types' },
      );
    }
  }
  return new Set(types);
}

/**
 * The types a credential's stream may carry (lib/contracts/event-types.ts `EVENT_READERS`): those
 * whose scope its key or session holds, and people's, invitations' and keys' only for a
 * signed-in member. Asking for another by `types=` answers 403 naming what it needs; without
 * `types=`, the others are left out. Undefined: every type.
 */
export function readableTypes(
  state: GatewayState,
  asked: ReadonlySet<string> | undefined,
): ReadonlySet<string> | undefined {
  const scopes = state.key?.scopes ?? [];
  const may = (type: keyof typeof EVENT_READERS) => {
    const readers = EVENT_READERS[type];
    return readers === 'members' ? state.session !== undefined : scopes.includes(readers);
  };
  if (asked) {
    for (const type of asked) {
      if (may(type as keyof typeof EVENT_READERS)) continue;
      const readers = EVENT_READERS[type as keyof typeof EVENT_READERS];
      throw forbidden(
        readers === 'members'
          ? `${type} events are sent to the organization's signed-in members only`
          : `${type} events need the ${readers} scope`,
      );
    }
    return asked;
  }
  const readable = STREAM_EVENT_TYPES.filter(may);
  return readable.length === STREAM_EVENT_TYPES.length ? undefined : new Set(readable);
}

/** The query of a stream: which types it carries. */
export const STREAM_QUERY = {
  types: {
    description: `only these event types, comma separated: ${STREAM_EVENT_TYPES.join(', ')}`,
    schema: { type: 'string', example: 'job.printed,job.failed' },
    read: (query, name) => parseTypes(single(query, name)),
  },
} as const satisfies QuerySpec;

/** Counts open streams by a name; `take` refuses past `max`, the release comes with the close. */
class OpenCounts {
  readonly #counts = new Map<string, number>();

  take(name: string, max: number): boolean {
    const n = this.#counts.get(name) ?? 0;
    if (n >= max) return false;
    this.#counts.set(name, n + 1);
    return true;
  }

  release(name: string): void {
    const n = (this.#counts.get(name) ?? 1) - 1;
    if (n <= 0) this.#counts.delete(name);
    else this.#counts.set(name, n);
  }
}

export function streamHandlers(deps: {
  events: EventStreams;
  cache: KeyAuthOptions['cache'];
  clock: KeyAuthOptions['clock'];
  sessions?: SessionOptions | undefined;
  /** The check of the path's organization against the key (auth.ts `requireOwnOrg`). */
  ownOrg: Handler;
}): Record<string, Handler> {
  const auth = [
    requireKeyOrSession({ cache: deps.cache, clock: deps.clock }, deps.sessions),
    deps.ownOrg,
    requireScope(STREAM_SCOPE),
  ];
  const open = new OpenCounts();
  return {
    'GET /v1/orgs/:org/stream': async (ctx) => {
      const types = readableTypes(ctx.state, readQuery(ctx.query, STREAM_QUERY).types);
      const lastHeader = ctx.get('Last-Event-ID').trim();
      let lastEventId: number | undefined;
      if (lastHeader !== '') {
        lastEventId = parseEventId(lastHeader);
        if (lastEventId === undefined) {
          throw new SpoolError('invalid', 'Last-Event-ID is not an id this stream sent', {
            param: 'Last-Event-ID',
          });
        }
      }
      try {
        await deps.events.ready();
      } catch {
        throw new SpoolError('unavailable', 'the event stream is starting; try again', {
          retryAfter: 1,
        });
      }
      const orgId = orgOf(ctx);
      const credential = `credential:${ctx.state.key?.id ?? ''}`;
      const org = `org:${orgId}`;
      const { streamsPerCredential, streamsPerOrg } = deps.events.limits;
      if (!open.take(credential, streamsPerCredential)) {
        throw new SpoolError(
          'rate_limited',
          `at most ${streamsPerCredential} event streams of one key or signed-in person are open at once; close one`,
          { retryAfter: 5 },
        );
      }
      if (!open.take(org, streamsPerOrg)) {
        open.release(credential);
        throw new SpoolError(
          'rate_limited',
          `at most ${streamsPerOrg} event streams of one organization are open at once; close one`,
          { retryAfter: 5 },
        );
      }
      ctx.res.once('close', () => {
        open.release(credential);
        open.release(org);
      });
      // From here the answer is the stream's: Koa writes nothing more.
      ctx.respond = false;
      const res = ctx.res;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        // Proxies that buffer answers (nginx) pass this one on as it comes.
        'X-Accel-Buffering': 'no',
      });
      res.flushHeaders();
      ctx.req.socket.setNoDelay(true);
      ctx.req.socket.setTimeout(0);
      await deps.events.open({
        orgId,
        res,
        types,
        lastEventId,
        allowed: stillAllowed(ctx, auth),
      });
    },
  };
}
