/**
 * Pieces every page shows: errors, its header, times, statuses, secrets and empty lists. The
 * session is in app.ts, loading and acting in resource.ts, asking before an action in
 * confirm.tsx, tables in table.tsx, forms in forms.tsx.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';

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
