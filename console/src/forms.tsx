/**
 * Forms: a panel with its heading, a form that runs an action instead of navigating, labelled
 * inputs that hand their value back, and the options of a select.
 */
import type { ComponentChildren, JSX } from 'preact';

/** A section of a page under its own heading, named by it. */
export function Panel(props: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section class="panel" aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** A form whose submission runs `onSubmit` on the page (the browser does not navigate). */
export function Form(props: {
  class?: string;
  onSubmit(): void | Promise<void>;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <form
      class={props.class}
      onSubmit={(e) => {
        e.preventDefault();
        void props.onSubmit();
      }}
    >
      {props.children}
    </form>
  );
}

/** A form's buttons: the one that submits it, and the one that goes back without it. */
export function FormButtons(props: {
  submit: string;
  /** The submit button waits (a request under way) or cannot be used yet. */
  disabled?: boolean;
  back: string;
  onBack(): void;
}): JSX.Element {
  return (
    <div class="form-buttons">
      <button type="submit" disabled={props.disabled}>
        {props.submit}
      </button>
      <button type="button" class="secondary" onClick={props.onBack}>
        {props.back}
      </button>
    </div>
  );
}

/** The attributes of a text input the console's forms set. */
interface InputAttributes {
  type?: 'text' | 'email' | 'password' | 'url' | 'datetime-local';
  name?: string;
  required?: boolean;
  minLength?: number | undefined;
  maxLength?: number;
  placeholder?: string;
  autocomplete?: string;
  /** The id of a `datalist` whose values are offered as the field is typed in. */
  list?: string;
  'aria-describedby'?: string;
}

/**
 * An input inside its label, so that the label names it; `hint` follows the input, in the label.
 * `onValue` hears each change of its text.
 */
export function Field(
  props: InputAttributes & {
    label: ComponentChildren;
    value: string;
    onValue(value: string): void;
    hint?: ComponentChildren;
  },
): JSX.Element {
  const { label, value, onValue, hint, ...attributes } = props;
  // Preact types an input's attributes by its literal `type`; this one's type is any of a few.
  const input = attributes as JSX.IntrinsicElements['input'];
  return (
    <label>
      {label}
      <input {...input} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
      {hint}
    </label>
  );
}

/** A select's options: `empty` first when given (the choice of none), then one per item. */
export function Options(props: {
  items: readonly { id: string; name: string }[];
  empty?: string;
}): JSX.Element {
  return (
    <>
      {props.empty === undefined ? null : <option value="">{props.empty}</option>}
      {props.items.map((x) => (
        <option key={x.id} value={x.id}>
          {x.name}
        </option>
      ))}
    </>
  );
}

/** Options named by their own values (roles, states). */
export function named(values: readonly string[]): { id: string; name: string }[] {
  return values.map((v) => ({ id: v, name: v }));
}

/**
 * Checkboxes choosing some of `choices`, each shown as code. With `every` (its label), a first
 * box stands for all of them (`*`), and the others are then checked and disabled.
 */
export function CheckList(props: {
  legend: string;
  choices: readonly string[];
  value: string[];
  onChange(value: string[]): void;
  every?: string;
}): JSX.Element {
  const all = props.every !== undefined && props.value.includes('*');
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <div class="checks">
        {props.every !== undefined ? (
          <label class="check">
            <input
              type="checkbox"
              checked={all}
              onChange={(e) => props.onChange(e.currentTarget.checked ? ['*'] : [])}
            />
            <span>
              {props.every} (<code>*</code>)
            </span>
          </label>
        ) : null}
        {props.choices.map((c) => (
          <label class="check" key={c}>
            <input
              type="checkbox"
              disabled={all}
              checked={all || props.value.includes(c)}
              onChange={(e) =>
                props.onChange(
                  e.currentTarget.checked
                    ? [...props.value, c]
                    : props.value.filter((x) => x !== c),
                )
              }
            />
            <code>{c}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** Radio buttons choosing one of `choices` (value and label). */
export function Radios<V extends string>(props: {
  legend: string;
  name: string;
  choices: readonly { value: V; label: string }[];
  value: V;
  onChange(value: NoInfer<V>): void;
}): JSX.Element {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.choices.map((c) => (
        <label class="check" key={c.value}>
          <input
            type="radio"
            name={props.name}
            value={c.value}
            checked={props.value === c.value}
            onChange={() => props.onChange(c.value)}
          />
          {c.label}
        </label>
      ))}
    </fieldset>
  );
}
