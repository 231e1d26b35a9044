/**
 * Live updates: one EventSource per organization on `GET /v1/orgs/{org}/stream` (same origin, with
 * the session cookie). The browser reconnects by itself, sending Last-Event-ID, so events that
 * happened meanwhile arrive too. Pages subscribe and re-read what an event changed.
 *
 * A stream the gateway refuses (any answer but 200: the session ended, the person left the
 * organization, a gateway starting) the browser gives up on for good. Then the session is read
 * again ({@link setStreamRefusedHandler}), which takes a person signed out to the sign-in page and
 * one removed from the organization to another, and the stream is opened anew after a wait (1 s,
 * doubling up to 30 s); a new stream cannot resume where the old one stopped, so once it is open
 * the page shown is read again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { STREAM_EVENT_TYPES } from '../../lib/contracts/event-types.js';
import { reloadPage } from './router.js';

export interface LiveEvent {
  id: string;
  type: string;
  data: { type?: string; data?: Record<string, unknown> } & Record<string, unknown>;
}

type Listener = (ev: LiveEvent) => void;

let refusedHandler: () => Promise<void> = async () => {};

/** What to do when the gateway refused the stream: read the session again. */
export function setStreamRefusedHandler(handler: () => Promise<void>): void {
  refusedHandler = handler;
}

const REOPEN_FIRST_MS = 1_000;
const REOPEN_MAX_MS = 30_000;
export type LiveState = 'connecting' | 'live' | 'reconnecting';

// Pages subscribe here, whatever stream is open (a page may mount before the stream opens).
const listeners = new Set<Listener>();
const stateListeners = new Set<(s: LiveState) => void>();
let liveState: LiveState = 'connecting';

class LiveStream {
  private source: EventSource | null = null;
  /** Refusals in a row, and the timer of the next try. */
  private refusals = 0;
  private reopen: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(private readonly org: string) {}

  start(): void {
    if (this.source || this.stopped) return;
    const source = new EventSource(`/v1/orgs/${encodeURIComponent(this.org)}/stream`, {
      withCredentials: true,
    });
    this.source = source;
    source.onopen = () => {
      this.setState('live');
      if (this.refusals > 0) {
        this.refusals = 0;
        // Events between the refusal and now are not resumed: the page reads anew.
        reloadPage();
      }
    };
    source.onerror = () => {
      this.setState('reconnecting');
      if (source.readyState === EventSource.CLOSED) this.refused(source);
    };
    for (const type of STREAM_EVENT_TYPES) {
      source.addEventListener(type, (e) => {
        const msg = e as MessageEvent<string>;
        let data: LiveEvent['data'] = {};
        try {
          data = JSON.parse(msg.data) as LiveEvent['data'];
        } catch {
          // A message that is not JSON carries nothing a page can use.
        }
        const ev: LiveEvent = { id: msg.lastEventId, type, data };
        if (this.source === source) for (const l of listeners) l(ev);
      });
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reopen);
    this.source?.close();
    this.source = null;
  }

  /** The browser gave up on `source`: the session is read again, then the stream opened anew. */
  private refused(source: EventSource): void {
    if (this.source !== source) return;
    source.close();
    this.source = null;
    const wait = Math.min(REOPEN_MAX_MS, REOPEN_FIRST_MS * 2 ** this.refusals);
    this.refusals += 1;
    this.reopen = setTimeout(() => {
      void refusedHandler()
        .catch(() => {})
        .then(() => this.start());
    }, wait);
  }

  private setState(s: LiveState): void {
    if (!this.source || this.stopped) return;
    liveState = s;
    for (const l of stateListeners) l(s);
  }
}

let stream: LiveStream | null = null;
let streamOrg = '';

export function connectLive(org: string | null): void {
  if (org === streamOrg && stream) return;
  stream?.stop();
  stream = null;
  streamOrg = org ?? '';
  if (!org) return;
  liveState = 'connecting';
  for (const l of stateListeners) l(liveState);
  stream = new LiveStream(org);
  stream.start();
}

/** Calls `handler` for each event whose type passes `filter` (a prefix such as 'job.'). */
export function useLive(filter: string | ((ev: LiveEvent) => boolean), handler: Listener): void {
  const ref = useRef(handler);
  ref.current = handler;
  const filterRef = useRef(filter);
  filterRef.current = filter;
  useEffect(() => {
    const l: Listener = (ev) => {
      const f = filterRef.current;
      const pass = typeof f === 'string' ? ev.type.startsWith(f) : f(ev);
      if (pass) ref.current(ev);
    };
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
}

export function useLiveState(): LiveState {
  const [state, setState] = useState<LiveState>(liveState);
  useEffect(() => {
    setState(liveState);
    stateListeners.add(setState);
    return () => {
      stateListeners.delete(setState);
    };
  }, []);
  return state;
}

/**
 * The job an event carries: job.* events carry `{job}` as their data, `job.rerouted` (a job moved
 * to another printer) beside `from_printer_id` and `to_printer_id`, so pages listening to `job.`
 * re-read a moved job as they do any other change.
 */
export function jobOf(ev: LiveEvent): { id: string } | null {
  const inner = (ev.data.data ?? ev.data) as { job?: { id: string } };
  return inner.job ?? null;
}
