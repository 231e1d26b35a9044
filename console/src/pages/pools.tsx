/**
 * Pools of printers: a job for a pool goes to the member its strategy chooses (DESIGN §5, "Pools
 * and routing"). The list, and for developers and above create, edit and delete.
 */
import type { JSX } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import {
  DEFAULT_FAILOVER_AFTER_S,
  DEFAULT_POOL_STRATEGY,
  MAX_FAILOVER_AFTER_S,
  MAX_POOL_NAME_LENGTH,
  type PoolStrategy,
} from '../../../lib/contracts/pools.js';
import { del, enc, get, patch, post, query } from '../api.js';
import { useApp, useCan } from '../app.js';
import { EditDeleteCell, useEditing } from '../editing.js';
import { Field, Form, FormButtons, Panel, Radios } from '../forms.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { urlPager, useSearch } from '../router.js';
import { Pager, Table } from '../table.js';
import type { Pool, PoolPage, Printer, PrinterPage } from '../types.js';
import { ErrorText, PageHeader, short, Time } from '../ui.js';

const STRATEGIES: readonly { value: PoolStrategy; label: string }[] = [
  { value: 'least_queued', label: 'Least queued: the member with the fewest unfinished jobs' },
  { value: 'ordered', label: 'Ordered: the first member, in the order below, that can print' },
];

/** The strategy as the list reads it. */
export function strategyName(strategy: string): string {
  return strategy === 'least_queued' ? 'least queued' : strategy;
}

/** A pool's failover wait as the list reads it. */
function failoverText(seconds: number): string {
  return seconds === 0 ? 'never' : `${seconds} s`;
}

/**
 * The organization's pools (the first 200, which is more than an organization is expected to
 * have), for the names the job pages show.
 */
export function usePools(orgId: string) {
  const r = useResource(() => get<PoolPage>(`/v1/orgs/${enc(orgId)}/pools?limit=200`), [orgId]);
  useLive('pool.', r.reloadSoon);
  return {
    pools: r.data?.items ?? [],
    pool: (id: string): Pool | undefined => r.data?.items.find((p) => p.id === id),
    /** A pool's name; one missing from the whole list was deleted since. */
    name: (id: string) =>
      r.data?.items.find((p) => p.id === id)?.name ??
      (r.data && !r.data.next_cursor ? `deleted pool ${short(id)}` : `pool ${short(id)}`),
  };
}

/** What the form edits, as the API takes it. */
interface Draft {
  name: string;
  printer_ids: string[];
  strategy: PoolStrategy;
  /** As typed, so that the field may be empty while it is edited. */
  failover_after: string;
}

function draftOf(pool: Pool | undefined): Draft {
  return pool
    ? {
        name: pool.name,
        printer_ids: [...pool.printer_ids],
        strategy: pool.strategy,
        failover_after: String(pool.failover_after),
      }
    : {
        name: '',
        printer_ids: [],
        strategy: DEFAULT_POOL_STRATEGY,
        failover_after: String(DEFAULT_FAILOVER_AFTER_S),
      };
}

/** `list` with the item at `i` swapped with the one at `i + by`. */
function swapped(list: string[], i: number, by: -1 | 1): string[] {
  const next = [...list];
  const j = i + by;
  if (j < 0 || j >= next.length) return next;
  [next[i], next[j]] = [next[j] as string, next[i] as string];
  return next;
}

/**
 * The members: a box per printer of the organization, then the chosen ones in their order, which
 * `ordered` tries first to last. A printer checked joins at the end.
 */
function MembersField(props: {
  printers: readonly Printer[];
  value: string[];
  onChange(ids: string[]): void;
  printerName(id: string): string;
}): JSX.Element {
  const { value, onChange, printerName } = props;
  return (
    <fieldset>
      <legend>Printers</legend>
      {props.printers.length === 0 ? (
        <p class="muted small">
          No printers yet: a pool's members are printers your stations' agents report.
        </p>
      ) : null}
      <div class="checks">
        {props.printers.map((p) => (
          <label class="check" key={p.id}>
            <input
              type="checkbox"
              checked={value.includes(p.id)}
              onChange={(e) =>
                onChange(
                  e.currentTarget.checked ? [...value, p.id] : value.filter((id) => id !== p.id),
                )
              }
            />
            {p.name}
          </label>
        ))}
      </div>
      {value.length > 1 ? (
        <>
          <p class="small muted" id="member-order">
            In this order (an ordered pool tries its members first to last):
          </p>
          <ol class="member-order" aria-labelledby="member-order">
            {value.map((id, i) => (
              <li key={id}>
                <span>{printerName(id)}</span>
                <button
                  type="button"
                  class="secondary small-button"
                  aria-label={`Move ${printerName(id)} up`}
                  disabled={i === 0}
                  onClick={() => onChange(swapped(value, i, -1))}
                >
                  Up
                </button>
                <button
                  type="button"
                  class="secondary small-button"
                  aria-label={`Move ${printerName(id)} down`}
                  disabled={i === value.length - 1}
                  onClick={() => onChange(swapped(value, i, 1))}
                >
                  Down
                </button>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </fieldset>
  );
}

/** The form that creates a pool, or edits `pool`; `onSaved` hears the pool saved. */
function PoolForm(props: {
  orgId: string;
  pool?: Pool;
  printers: readonly Printer[];
  printerName(id: string): string;
  onSaved(): Promise<void>;
  onClose(): void;
}): JSX.Element {
  const { pool } = props;
  const [draft, setDraft] = useState<Draft>(() => draftOf(pool));
  const box = useRef<HTMLDivElement>(null);
  // The person opened the form to fill it in: its first field has the focus, given as the form
  // appears (a layout effect), so that nothing typed meanwhile lands in a field it then leaves.
  useLayoutEffect(() => box.current?.querySelector('input')?.focus(), [pool?.id]);
  const save = useAction(async () => {
    if (draft.printer_ids.length === 0) throw new Error('Choose at least one printer.');
    const body = {
      name: draft.name.trim(),
      printer_ids: draft.printer_ids,
      strategy: draft.strategy,
      failover_after: Number(draft.failover_after),
    };
    const base = `/v1/orgs/${enc(props.orgId)}/pools`;
    if (pool) await patch(`${base}/${enc(pool.id)}`, body);
    else await post(base, body);
    await props.onSaved();
  });
  return (
    <Panel id="pool-form" title={pool ? `Edit pool ${pool.name}` : 'New pool'}>
      <div ref={box}>
        <Form class="stack-form" onSubmit={save.run}>
          <div class="row">
            <Field
              label="Name"
              required
              maxLength={MAX_POOL_NAME_LENGTH}
              value={draft.name}
              placeholder="e.g. front desk"
              onValue={(name) => setDraft({ ...draft, name })}
            />
            <label>
              Failover after (seconds)
              <input
                type="number"
                required
                min={0}
                max={MAX_FAILOVER_AFTER_S}
                step={1}
                value={draft.failover_after}
                aria-describedby="failover-hint"
                onInput={(e) => setDraft({ ...draft, failover_after: e.currentTarget.value })}
              />
              <span class="small muted" id="failover-hint">
                How long a chosen printer may be unable to print before its jobs that no station has
                taken yet go to another member; 0: never.
              </span>
            </label>
          </div>
          <MembersField
            printers={props.printers}
            value={draft.printer_ids}
            printerName={props.printerName}
            onChange={(printer_ids) => setDraft({ ...draft, printer_ids })}
          />
          <Radios
            legend="Strategy"
            name="strategy"
            choices={STRATEGIES}
            value={draft.strategy}
            onChange={(strategy) => setDraft({ ...draft, strategy })}
          />
          <ErrorText error={save.error} />
          <FormButtons
            submit={pool ? 'Save pool' : 'Create pool'}
            disabled={save.busy}
            back="Cancel"
            onBack={props.onClose}
          />
        </Form>
      </div>
    </Panel>
  );
}

export function PoolsPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const { cursor, pager } = urlPager(useSearch(), {});
  const r = useResource(
    () => get<PoolPage>(`/v1/orgs/${enc(org.id)}/pools${query({ limit: '100', cursor })}`),
    [org.id, cursor],
  );
  const printers = useResource(
    () => get<PrinterPage>(`/v1/orgs/${enc(org.id)}/printers?limit=200`),
    [org.id],
  );
  useLive('pool.', r.reloadSoon);
  // The printers a pool may have, and the names of its members: a status changes neither.
  useLive(
    (ev) => ev.type === 'printer.created' || ev.type === 'printer.deleted',
    printers.reloadSoon,
  );
  const printerName = (id: string) =>
    printers.data?.printers.find((p) => p.id === id)?.name ?? `printer ${short(id)}`;
  const editing = useEditing<Pool>({
    remove: (id) => del(`/v1/orgs/${enc(org.id)}/pools/${enc(id)}`),
    reload: r.reload,
    confirmOf: (p) => ({
      title: `Delete the pool ${p.name}?`,
      body: (
        <>
          <p>Jobs can no longer be sent to it. Its printers and the jobs already given one stay.</p>
          <p>Spool refuses while jobs of the pool still wait for a member: move or cancel them.</p>
        </>
      ),
      confirm: 'Delete pool',
    }),
  });
  const pools = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="Pools">
        {canWrite && !editing.creating ? (
          <button type="button" onClick={editing.create}>
            Create pool
          </button>
        ) : null}
      </PageHeader>
      {editing.dialog}
      <p class="lead">
        A job sent to a pool goes to one of its printers that can print it now, chosen by the pool's
        strategy; while none can, it waits, and a printer that stops printing hands its waiting jobs
        on to another member.
      </p>
      {editing.form && canWrite ? (
        <PoolForm
          key={editing.form.item?.id ?? 'new'}
          orgId={org.id}
          pool={editing.form.item}
          printers={printers.data?.printers ?? []}
          printerName={printerName}
          onClose={editing.close}
          onSaved={editing.saved}
        />
      ) : null}
      <ErrorText error={r.error || printers.error} />
      <ErrorText error={editing.removing.error} />
      <Table
        label="Pools"
        columns={['Name', 'Members', 'Strategy', 'Failover after', 'Created']}
        actions={canWrite}
        rows={pools}
        empty={
          canWrite
            ? 'No pools yet: create one to let Spool choose among printers.'
            : 'No pools yet.'
        }
        loaded={r.data !== undefined}
        row={(p) => (
          <tr key={p.id}>
            <th scope="row" id={`pool-${p.id}`}>
              {p.name}
            </th>
            <td data-label="Members">
              {p.printer_ids.length === 0 ? (
                <span class="muted">none: its printers were deleted</span>
              ) : (
                p.printer_ids.map(printerName).join(p.strategy === 'ordered' ? ' → ' : ', ')
              )}
            </td>
            <td data-label="Strategy">{strategyName(p.strategy)}</td>
            <td data-label="Failover after">{failoverText(p.failover_after)}</td>
            <td data-label="Created">
              <Time at={p.created_at} />
            </td>
            {canWrite ? (
              <EditDeleteCell
                describedBy={`pool-${p.id}`}
                busy={editing.removing.busy}
                onEdit={() => editing.edit(p)}
                onDelete={() => void editing.askRemove(p)}
                deleteLabel="Delete pool"
              />
            ) : null}
          </tr>
        )}
      />
      <Pager {...pager} next={r.data?.next_cursor} />
    </>
  );
}
