/** A small router over the History API: the app's pages live under /console/. */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

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
