/**
 * Asking before an action that cannot be taken back: one modal dialog, naming the thing and what
 * will happen.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';

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
  useLayoutEffect(() => {
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
