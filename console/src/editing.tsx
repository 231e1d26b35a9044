/**
 * The making, changing and deleting of a page's resources (pools, locations): which form is open
 * (a new one's, or the one being edited's), the delete that asks first, and each row's Edit and
 * Delete buttons.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { type ConfirmRequest, useConfirm } from './confirm.js';
import { useAction } from './resource.js';
import { ActionsCell, DangerButton } from './table.js';

export interface Editing<T extends { id: string }> {
  /** The form shown: a new one's (no `item`), or the one being edited's; null for none. */
  form: { item?: T } | null;
  /** Whether the form shown is a new one's. */
  creating: boolean;
  create(): void;
  edit(item: T): void;
  close(): void;
  /** The form saved: it closes and the list is read again. */
  saved(): Promise<void>;
  /** Asks, then deletes `item`. */
  askRemove(item: T): Promise<void>;
  removing: { busy: boolean; error: string };
  /** The confirmation dialog, rendered on the page. */
  dialog: JSX.Element | null;
}

export function useEditing<T extends { id: string }>(options: {
  /** Deletes the resource of this id. */
  remove(id: string): Promise<void>;
  /** Reads the list again. */
  reload(): Promise<void>;
  /** What deleting `item` asks first. */
  confirmOf(item: T): ConfirmRequest;
}): Editing<T> {
  const [form, setForm] = useState<{ item?: T } | null>(null);
  const remove = useAction(async (id: string) => {
    await options.remove(id);
    // Its form, if open, has nothing left to edit.
    setForm((open) => (open?.item?.id === id ? null : open));
    await options.reload();
  });
  const confirm = useConfirm();
  return {
    form,
    creating: form !== null && form.item === undefined,
    create() {
      remove.clear();
      setForm({});
    },
    edit(item) {
      remove.clear();
      setForm({ item });
    },
    close: () => setForm(null),
    async saved() {
      setForm(null);
      await options.reload();
    },
    async askRemove(item) {
      if (await confirm.ask(options.confirmOf(item))) await remove.run(item.id);
    },
    removing: remove,
    dialog: confirm.dialog,
  };
}

/** A row's Edit and Delete buttons, each described by the row's heading (`describedBy`). */
export function EditDeleteCell(props: {
  describedBy: string;
  busy: boolean;
  onEdit(): void;
  onDelete(): void;
  /** The delete button's words: "Delete pool". */
  deleteLabel: string;
}): JSX.Element {
  return (
    <ActionsCell>
      <button
        type="button"
        class="secondary"
        aria-describedby={props.describedBy}
        onClick={props.onEdit}
      >
        Edit
      </button>{' '}
      <DangerButton busy={props.busy} describedBy={props.describedBy} onClick={props.onDelete}>
        {props.deleteLabel}
      </DangerButton>
    </ActionsCell>
  );
}
