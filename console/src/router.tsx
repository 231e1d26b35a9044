/** A small router over the History API: the app's pages live under /console/. */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';

export const BASE = '/console';

function current(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return p === '' ? '/' : p;
}

let visits = 0;

/** Counts navigations, so that following a link to the page already shown reloads it. */
export function visitCount(): number {
  return visits;
}

/** Shows the page shown anew, reading what it shows again, where the person is on it. */
export function reloadPage(): void {
  visits += 1;
  window.dispatchEvent(new Event('spool:navigate'));
}

export function navigate(to: string, replace = false): void {
  visits += 1;
  const url = BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.dispatchEvent(new Event('spool:navigate'));
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [{ path }, setPath] = useState(() => ({ path: current(), visit: visits }));
  useEffect(() => {
    const update = () => setPath({ path: current() + location.search, visit: visits });
    update();
    window.addEventListener('popstate', update);
    window.addEventListener('spool:navigate', update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener('spool:navigate', update);
    };
  }, []);
  return path.split('?')[0] ?? '/';
}

/** The query of the page shown, kept current as the person moves through history. */
export function useSearch(): URLSearchParams {
  const [search, setSearchText] = useState(() => location.search);
  useEffect(() => {
    const update = () => setSearchText(location.search);
    window.addEventListener('popstate', update);
    window.addEventListener('spool:navigate', update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener('spool:navigate', update);
    };
  }, []);
  return useMemo(() => new URLSearchParams(search), [search]);
}

/**
 * Shows the page shown with another query, as a new history entry, so that reload, a shared link
 * and Back all find it; `state` rides with the entry (`history.state`), reload and Back included.
 * Unlike `navigate`, the page stays mounted and keeps the scroll position.
 */
export function setSearch(params: Record<string, string | undefined>, state: unknown = null): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  history.pushState(state, '', `${location.pathname}${s ? `?${s}` : ''}`);
  window.dispatchEvent(new Event('spool:navigate'));
}

/**
 * A list's page kept in the URL's query (`cursor`), beside the list's other `params`, so that
 * reload, Back and a shared link show the same page; the cursors of the pages before it ride in
 * the history entry, for Previous page. A link to a later page, opened afresh, offers First page.
 * Answers the page's cursor and what the list's Pager takes besides `next`.
 */
export function urlPager(
  search: URLSearchParams,
  params: Record<string, string | undefined>,
): {
  cursor: string;
  pager: { hasPrev: boolean; prevLabel?: string; onPrev(): void; onNext(c: string): void };
} {
  const cursor = search.get('cursor') ?? '';
  const state = history.state as { cursors?: unknown } | null;
  const before = Array.isArray(state?.cursors) ? (state.cursors as string[]) : null;
  return {
    cursor,
    pager: {
      hasPrev: cursor !== '',
      prevLabel: before ? undefined : 'First page',
      onPrev: () =>
        before
          ? setSearch(
              { ...params, cursor: before[before.length - 1] },
              { cursors: before.slice(0, -1) },
            )
          : setSearch(params),
      onNext: (c) => setSearch({ ...params, cursor: c }, { cursors: [...(before ?? []), cursor] }),
    },
  };
}

export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
}): JSX.Element {
  return (
    <a
      href={BASE + props.href}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}
