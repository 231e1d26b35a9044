/**
 * Pieces every page uses: loading data, showing errors, times, statuses and secrets, and asking
 * before an action that cannot be taken back.
 */
import type { ComponentChildren, JSX } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError, type OrgMembership, ROLES, type Role, type Session } from './api.js';

export interface AppState {
  session: Session;
  org: OrgMembership;
  setOrg(id: string): void;
  signOut(): Promise<void>;
  /** Shows the organization's new name (the settings page renamed it). */
  renamedOrg(name: string): void;
}
export const AppContext = createContext<AppState | null>(null);

export function useApp(): AppState {
  const app = useContext(AppContext);
  if (!app) throw new Error('no session');
  return app;
}

/** Whether the signed-in person's role in the current organization is at least `role`. */
export function useCan(role: Role): boolean {
  const { org } = useApp();
  return ROLES.indexOf(org.role) >= ROLES.indexOf(role);
}

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export interface Resource<T> {
  data: T | undefined;
  error: string;
  loading: boolean;
  reload(): Promise<void>;
  /** Reload soon, once, however many times it is asked within the wait (live events). */
  reloadSoon(): void;
}

export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const timer = useRef<number | undefined>(undefined);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    const n = ++seq.current;
    setLoading(true);
    try {
      const value = await loader.current();
      if (n !== seq.current) return;
      setData(value);
      setError('');
    } catch (err) {
      if (n !== seq.current) return;
      setError(messageOf(err));
    } finally {
      if (n === seq.current) setLoading(false);
    }
  }, []);
  const reloadSoon = useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      void reload();
    }, 150);
  }, [reload]);
  useEffect(() => {
    void reload();
    return () => window.clearTimeout(timer.current);
  }, deps);
  return { data, error, loading, reload, reloadSoon };
}

/** Runs an action, keeping its error and whether it is under way, for a form or a button. */
export function useAction<A extends unknown[]>(
  action: (...args: A) => Promise<void>,
): { run: (...args: A) => Promise<void>; busy: boolean; error: string; clear(): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const run = async (...args: A) => {
    setBusy(true);
    setError('');
    try {
      await action(...args);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError('') };
}

export function ErrorText(props: { error: string }): JSX.Element | null {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error}
    </p>
  );
}

export function PageHeader(props: { title: string; children?: ComponentChildren }): JSX.Element {
  return (
    <header class="page-header">
      <h1>{props.title}</h1>
      {props.children ? <div class="page-actions">{props.children}</div> : null}
    </header>
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, {
  dateStyle: 'medium',
  timeStyle: 'medium',
});

export function Time(props: { at: string | null | undefined; empty?: string }): JSX.Element {
  if (!props.at) return <span class="muted">{props.empty ?? '—'}</span>;
  const d = new Date(props.at);
  return (
    <time dateTime={props.at} title={props.at}>
      {dateTime.format(d)}
    </time>
  );
}

export function Status(props: { status: string }): JSX.Element {
  return (
    <span class={`status status-${props.status.replace(/[^a-z_]/g, '')}`}>{props.status}</span>
  );
}

/** A secret shown once, in the element named `Secret`, with a button to copy it. */
export function SecretBox(props: { secret: string; note: ComponentChildren }): JSX.Element {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret-box">
      <p>{props.note}</p>
      <div class="secret-row">
        <output class="secret" aria-label="Secret">
          {props.secret}
        </output>
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(props.secret);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  );
}

export function Empty(props: { children: ComponentChildren }): JSX.Element {
  return <p class="empty">{props.children}</p>;
}

export function short(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}

/** RFC 3339 as a `datetime-local` value, in the viewer's own time. */
export function rfc3339ToLocal(value: string): string {
  if (!value) return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** A `datetime-local` value (the viewer's own time) as RFC 3339 in UTC. */
export function localToRfc3339(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return undefined;
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** What a confirmation asks: a question, what will happen, and the button that does it. */
export interface ConfirmRequest {
  /** The dialog's heading, a question naming the thing: "Revoke the key shop backend?" */
  title: string;
  /** What will happen, in a sentence or two. */
  body: ComponentChildren;
  /** The destructive button, named after the action: "Revoke key". */
  confirm: string;
  /** The button that does nothing; "Cancel" unless that reads as the action itself. */
  dismiss?: string;
}

/**
 * One confirmation step before a destructive action: `if (await confirm.ask({…})) act()`, with
 * `confirm.dialog` rendered on the page. Escape, and the dismiss button, answer false.
 */
export function useConfirm(): {
  ask(req: ConfirmRequest): Promise<boolean>;
  dialog: JSX.Element | null;
} {
  const [req, setReq] = useState<ConfirmRequest | null>(null);
  const answer = useRef<((ok: boolean) => void) | null>(null);
  const ask = useCallback(
    (next: ConfirmRequest) =>
      new Promise<boolean>((resolve) => {
        answer.current?.(false);
        answer.current = resolve;
        setReq(next);
      }),
    [],
  );
  const done = (ok: boolean) => {
    const resolve = answer.current;
    answer.current = null;
    setReq(null);
    resolve?.(ok);
  };
  return { ask, dialog: req ? <ConfirmDialog req={req} onDone={done} /> : null };
}

function ConfirmDialog(props: { req: ConfirmRequest; onDone(ok: boolean): void }): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  const keep = useRef<HTMLButtonElement>(null);
  const id = useId();
  useEffect(() => {
    // Modal: the rest of the page is inert until it closes, and Escape closes it. The harmless
    // answer has the focus, so that Enter alone does nothing lasting.
    ref.current?.showModal();
    keep.current?.focus();
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-body`}
      onClose={(e) => props.onDone(e.currentTarget.returnValue === 'confirm')}
    >
      <form method="dialog">
        <h2 id={`${id}-title`}>{props.req.title}</h2>
        <div id={`${id}-body`} class="confirm-body">
          {props.req.body}
        </div>
        <div class="dialog-buttons">
          <button ref={keep} type="submit" value="cancel" class="secondary">
            {props.req.dismiss ?? 'Cancel'}
          </button>
          <button type="submit" value="confirm" class="destructive">
            {props.req.confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}
