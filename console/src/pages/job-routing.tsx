/**
 * Where a job goes and why, on the job pages: its pool and the printer chosen (or that it waits
 * for one), the routing in its timeline by printer name, and moving it to another printer.
 */
import type { JSX } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { enc, post } from '../api.js';
import { FormButtons } from '../forms.js';
import { useAction } from '../resource.js';
import { Link } from '../router.js';
import type { Job, JobEvent, JobStatus, Pool, Printer } from '../types.js';
import { ErrorText, Time } from '../ui.js';
import { strategyName } from './pools.js';

/** The statuses a job can be moved from (a job a station has taken is never moved). */
export const MOVABLE: readonly JobStatus[] = ['queued', 'scheduled', 'held'];

/** The pools a job page knows, by id. */
export interface PoolNames {
  pool(id: string): Pool | undefined;
  name(id: string): string;
}

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** `text` (an event's detail: `routed to <printer id>`) with the ids of known printers named. */
export function withPrinterNames(text: string, printers: readonly Printer[]): string {
  return text.replace(
    UUID,
    (id) => printers.find((p) => p.id.toLowerCase() === id.toLowerCase())?.name ?? id,
  );
}

/** The job list's printer cell: the printer, or the pool while it waits for a member. */
export function Placement(props: {
  job: Job;
  printer(id: string): string;
  pools: PoolNames;
}): JSX.Element {
  const { job } = props;
  if (job.printer_id === null) {
    return job.pool_id ? (
      <>
        <span class="muted">waiting for a member of</span> {props.pools.name(job.pool_id)}
      </>
    ) : (
      <span class="muted">—</span>
    );
  }
  return (
    <>
      {props.printer(job.printer_id)}
      {job.pool_id ? <div class="small muted">pool {props.pools.name(job.pool_id)}</div> : null}
    </>
  );
}

/** The last routing of a job: its event, whose detail is `routed to <printer id>`. */
function lastRouting(events: readonly JobEvent[]): JobEvent | undefined {
  return events.findLast((e) => e.detail.startsWith('routed to '));
}

/**
 * The job page's details of where the job goes: its pool (with the strategy that chose), its
 * printer and station, and when and by whom it was last routed.
 */
export function RoutingDetails(props: {
  job: Job;
  events: readonly JobEvent[];
  pools: PoolNames;
  printer(id: string): string;
  station(id: string): string;
  actorName(actor: string): string;
}): JSX.Element {
  const { job } = props;
  const pool = job.pool_id ? props.pools.pool(job.pool_id) : undefined;
  const routed = lastRouting(props.events);
  return (
    <>
      {job.pool_id ? (
        <>
          <dt>Pool</dt>
          <dd>
            <Link href="/pools">{props.pools.name(job.pool_id)}</Link>
            {pool ? <span class="muted"> ({strategyName(pool.strategy)})</span> : null}
          </dd>
        </>
      ) : null}
      <dt>Printer</dt>
      <dd>
        {job.printer_id === null ? (
          <span class="muted">waiting for a member</span>
        ) : (
          props.printer(job.printer_id)
        )}
      </dd>
      <dt>Station</dt>
      <dd>
        {job.station_id === null ? <span class="muted">—</span> : props.station(job.station_id)}
      </dd>
      {routed && job.printer_id !== null ? (
        <>
          <dt>Routed</dt>
          <dd>
            <Time at={routed.at} /> <span class="muted">{props.actorName(routed.actor)}</span>
          </dd>
        </>
      ) : null}
      <dt>Priority</dt>
      <dd>{job.priority}</dd>
    </>
  );
}

/**
 * Moving a job to another printer of the organization: a pool's members are offered first, and a
 * printer outside the pool takes the job out of it.
 */
export function MoveForm(props: {
  orgId: string;
  job: Job;
  printers: readonly Printer[];
  pool: Pool | undefined;
  onMoved(): Promise<void>;
  onClose(): void;
}): JSX.Element {
  const { job, pool } = props;
  const others = props.printers.filter((p) => p.id !== job.printer_id);
  const members = pool ? others.filter((p) => pool.printer_ids.includes(p.id)) : [];
  const rest = others.filter((p) => !members.includes(p));
  const [to, setTo] = useState(() => (members[0] ?? rest[0])?.id ?? '');
  const select = useRef<HTMLSelectElement>(null);
  useLayoutEffect(() => select.current?.focus(), []);
  const move = useAction(async () => {
    await post(`/v1/orgs/${enc(props.orgId)}/jobs/${enc(job.id)}/move`, { printer_id: to });
    await props.onMoved();
  });
  const option = (p: Printer) => (
    <option key={p.id} value={p.id}>
      {p.name}
    </option>
  );
  const leaves = pool && to !== '' && !pool.printer_ids.includes(to);
  return (
    <section class="panel" aria-labelledby="move-job">
      <h2 id="move-job">Move to another printer</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void move.run();
        }}
      >
        <label>
          To printer
          <select ref={select} required value={to} onChange={(e) => setTo(e.currentTarget.value)}>
            {pool ? (
              <>
                <optgroup label={`Pool ${pool.name}`}>{members.map(option)}</optgroup>
                <optgroup label="Other printers">{rest.map(option)}</optgroup>
              </>
            ) : (
              rest.map(option)
            )}
          </select>
        </label>
        <FormButtons
          submit="Move job"
          disabled={move.busy || to === ''}
          back="Don't move"
          onBack={props.onClose}
        />
      </form>
      {others.length === 0 ? <p class="muted">The organization has no other printer.</p> : null}
      {leaves ? (
        <p class="small muted">
          That printer is not in the pool {pool.name}: the job leaves the pool, and Spool no longer
          chooses its printer.
        </p>
      ) : null}
      <ErrorText error={move.error} />
    </section>
  );
}
