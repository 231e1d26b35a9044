/**
 * Lists of things: a table whose rows become cards on a narrow screen (`table.stack`, each cell
 * under its column's name), and the pager under a list read a page at a time.
 */
import type { ComponentChildren, JSX } from 'preact';
import { Empty } from './ui.js';

export interface TableProps<T> {
  /** The table's accessible name, as tests and screen readers find it. */
  label: string;
  /** The columns' headings, the row's own heading first. */
  columns: readonly string[];
  /** A last column of buttons, its heading for screen readers only. */
  actions?: boolean;
  rows: readonly T[];
  row(item: T): JSX.Element;
  /**
   * What an empty list says once loaded (`loaded`); while it loads, nothing. Without it the
   * table is shown however many rows it has.
   */
  empty?: ComponentChildren;
  loaded?: boolean;
  /** The table's class beside `stack`, and its wrapper's (`table-wrap` unless told). */
  class?: string;
  wrap?: string;
}

export function Table<T>(props: TableProps<T>): JSX.Element | null {
  if (props.empty !== undefined && props.rows.length === 0) {
    return props.loaded ? <Empty>{props.empty}</Empty> : null;
  }
  return (
    <div class={props.wrap ?? 'table-wrap'}>
      <table class={props.class ? `${props.class} stack` : 'stack'} aria-label={props.label}>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            {props.actions ? (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{props.rows.map(props.row)}</tbody>
      </table>
    </div>
  );
}

/** The row's cell of actions; empty when the person may not act on that row. */
export function ActionsCell(props: { children?: ComponentChildren }): JSX.Element {
  return <td class="actions">{props.children}</td>;
}

/** A destructive button in a row, described by the row's name for screen readers. */
export function DangerButton(props: {
  label?: string;
  describedBy?: string;
  title?: string;
  busy: boolean;
  onClick(): void;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <button
      type="button"
      class="danger"
      aria-label={props.label}
      aria-describedby={props.describedBy}
      title={props.title}
      disabled={props.busy}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}

export interface PagerProps {
  hasPrev: boolean;
  next: string | undefined;
  onPrev(): void;
  onNext(c: string): void;
  /** Where `onPrev` goes when that is not the previous page ("First page"). */
  prevLabel?: string;
}

export function Pager(props: PagerProps): JSX.Element | null {
  if (!props.hasPrev && !props.next) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={!props.hasPrev} onClick={props.onPrev}>
        {props.prevLabel ?? 'Previous page'}
      </button>
      <button
        type="button"
        class="secondary"
        disabled={!props.next}
        onClick={() => props.next && props.onNext(props.next)}
      >
        Next page
      </button>
    </nav>
  );
}
