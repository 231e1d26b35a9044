/** Overview, printers and stations. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { del, enc, get, type Location, type Printer, post, query, type Station } from '../api.js';
import { useLive } from '../live.js';
import { urlPager, useSearch } from '../router.js';
import {
  Empty,
  ErrorText,
  PageHeader,
  SecretBox,
  Status,
  Time,
  useAction,
  useApp,
  useCan,
  useConfirm,
  useResource,
} from '../ui.js';

interface Overview {
  stations: { online: number; total: number };
  /** By the status each printer last reported, whether or not its station is connected. */
  printers: Record<string, number>;
  jobs_today: Record<string, number>;
  /** The start of the UTC day the jobs are counted from. */
  since?: string;
}

function Counts(props: { counts: Record<string, number>; empty: string }): JSX.Element {
  const entries = Object.entries(props.counts).filter(([, n]) => n > 0);
  if (entries.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <dl class="counts">
      {entries.map(([status, n]) => (
        <div key={status}>
          <dt>
            <Status status={status} />
          </dt>
          <dd>{n}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * The status a person should read. A printer whose station is not connected cannot print,
 * whatever it last reported: it is `unreachable` (what it last reported stays in its detail).
 */
export function printerStatus(p: Printer): string {
  return p.station_online || p.status === 'removed' ? p.status : 'unreachable';
}

export function OverviewPage(): JSX.Element {
  const { org } = useApp();
  // The overview counts a printer of an offline station as `unreachable`, as printerStatus does.
  const r = useResource(() => get<Overview>(`/console/v1/orgs/${enc(org.id)}/overview`), [org.id]);
  useLive(() => true, r.reloadSoon);
  const o = r.data;
  const jobsTotal = o ? Object.values(o.jobs_today).reduce((a, b) => a + b, 0) : 0;
  return (
    <>
      <PageHeader title="Overview" />
      <ErrorText error={r.error} />
      {o ? (
        <div class="cards">
          <section class="card" aria-labelledby="ov-stations">
            <h2 id="ov-stations">Stations online</h2>
            <p class="big">
              {o.stations.online} <span class="muted">of {o.stations.total}</span>
            </p>
          </section>
          <section class="card" aria-labelledby="ov-printers">
            <h2 id="ov-printers">Printers by status</h2>
            <Counts counts={o.printers} empty="No printers reported yet." />
          </section>
          <section class="card" aria-labelledby="ov-jobs">
            <h2 id="ov-jobs">Jobs today</h2>
            <p class="big">{jobsTotal}</p>
            {o.since ? (
              <p class="small muted">
                since <Time at={o.since} /> (midnight UTC)
              </p>
            ) : null}
            <Counts counts={o.jobs_today} empty="No jobs today." />
          </section>
        </div>
      ) : null}
    </>
  );
}

export function PrintersPage(): JSX.Element {
  const { org } = useApp();
  // The page is in the URL, as the job list's is.
  const { cursor, pager } = urlPager(useSearch(), {});
  const r = useResource(
    () =>
      get<{ printers: Printer[]; next_cursor: string }>(
        `/v1/orgs/${enc(org.id)}/printers${query({ limit: '100', cursor })}`,
      ),
    [org.id, cursor],
  );
  const stations = useResource(
    () => get<{ items: Station[] }>(`/console/v1/orgs/${enc(org.id)}/stations`),
    [org.id],
  );
  useLive((ev) => ev.type === 'printer.status' || ev.type.startsWith('station.'), r.reloadSoon);
  const stationName = (id: string) => stations.data?.items.find((s) => s.id === id)?.name ?? id;
  const printers = r.data?.printers ?? [];
  const canDelete = useCan('admin');
  const remove = useAction(async (id: string) => {
    await del(`/console/v1/orgs/${enc(org.id)}/printers/${enc(id)}`);
    await r.reload();
  });
  const confirm = useConfirm();
  const askRemove = async (p: Printer) => {
    const ok = await confirm.ask({
      title: `Delete the printer ${p.name}?`,
      body: (
        <>
          <p>Its jobs that have not finished fail, each saying that the printer was deleted.</p>
          <p>
            {p.status === 'removed'
              ? 'Its agent no longer reports it.'
              : 'Its agent still reports it: it comes back, under a new id, when the agent next sends its printers. Remove it from the agent first.'}
          </p>
        </>
      ),
      confirm: 'Delete printer',
    });
    if (ok) await remove.run(p.id);
  };
  return (
    <>
      <PageHeader title="Printers" />
      {confirm.dialog}
      <p class="lead">Printers are reported by the agents of your stations, with their status.</p>
      <ErrorText error={r.error} />
      <ErrorText error={remove.error} />
      {r.data && printers.length === 0 ? (
        <Empty>No printers yet: start an agent on a station (see Stations).</Empty>
      ) : null}
      {printers.length > 0 ? (
        <div class="table-wrap">
          <table class="stack" aria-label="Printers">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Detail</th>
                <th scope="col">Station</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Updated</th>
                {canDelete ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {printers.map((p) => (
                <tr key={p.id}>
                  <th scope="row" id={`printer-${p.id}`}>
                    {p.name}
                  </th>
                  <td data-label="Status">
                    <Status status={printerStatus(p)} />
                  </td>
                  <td data-label="Detail">
                    {printerStatus(p) === p.status ? null : (
                      <span class="muted">
                        its station is offline; it last reported {p.status}.{' '}
                      </span>
                    )}
                    {p.detail ||
                      (printerStatus(p) === p.status ? <span class="muted">—</span> : null)}
                  </td>
                  <td data-label="Station">
                    {stationName(p.station_id)}{' '}
                    {p.station_online ? null : <span class="tag">station offline</span>}
                    <RegionTag region={p.region} />
                  </td>
                  <td class="small" data-label="Capabilities">
                    {[
                      p.capabilities.paper_sizes?.join(', '),
                      p.capabilities.duplex ? 'duplex' : null,
                      p.capabilities.color ? 'color' : null,
                    ]
                      .filter(Boolean)
                      .join(' · ') || <span class="muted">prints documents as they are</span>}
                  </td>
                  <td data-label="Updated">
                    <Time at={p.updated_at} />
                  </td>
                  {canDelete ? (
                    <td class="actions">
                      {/* Its waiting jobs fail; a printer its agent still reports comes back. */}
                      <button
                        type="button"
                        class="danger"
                        disabled={remove.busy}
                        aria-describedby={`printer-${p.id}`}
                        title={
                          p.status === 'removed'
                            ? 'Its agent no longer reports it'
                            : 'Its agent still reports it: it comes back, under a new id, when the agent next sends its printers (a change of status, a reconnect). Remove it from the agent first.'
                        }
                        onClick={() => void askRemove(p)}
                      >
                        Delete printer
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <Pager {...pager} next={r.data?.next_cursor} />
    </>
  );
}

export function Pager(props: {
  hasPrev: boolean;
  next: string | undefined;
  onPrev(): void;
  onNext(c: string): void;
  /** Where `onPrev` goes when that is not the previous page ("First page"). */
  prevLabel?: string;
}): JSX.Element | null {
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

export function StationsPage(): JSX.Element {
  const { org } = useApp();
  const canCreate = useCan('admin');
  const r = useResource(
    () => get<{ items: Station[] }>(`/console/v1/orgs/${enc(org.id)}/stations`),
    [org.id],
  );
  const locations = useResource(
    () => get<{ locations: Location[] }>(`/v1/orgs/${enc(org.id)}/locations?limit=200`),
    [org.id],
  );
  useLive('station.', r.reloadSoon);
  const [name, setName] = useState('');
  const [locationId, setLocationId] = useState('');
  const [created, setCreated] = useState<{ station: Station; token: string } | null>(null);
  const create = useAction(async () => {
    const res = await post<{ station: Station; token: string }>(
      `/console/v1/orgs/${enc(org.id)}/stations`,
      locationId ? { name, location_id: locationId } : { name },
    );
    setCreated(res);
    setName('');
    await r.reload();
  });
  const locationName = (id: string | null) =>
    id ? (locations.data?.locations.find((l) => l.id === id)?.name ?? id) : '';
  const items = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="Stations" />
      <p class="lead">
        A station is a computer running <code>spool agent</code> with its device token; it prints
        for the printers attached to it.
      </p>
      {canCreate ? (
        <section class="panel" aria-labelledby="new-station">
          <h2 id="new-station">New station</h2>
          <form
            class="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              void create.run();
            }}
          >
            <label>
              Name
              <input
                required
                maxLength={200}
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            </label>
            <label>
              Location
              <select value={locationId} onChange={(e) => setLocationId(e.currentTarget.value)}>
                <option value="">None</option>
                {(locations.data?.locations ?? []).map((l) => (
                  <option key={l.id} value={l.id}>
                    {l.name}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={create.busy}>
              Create station
            </button>
          </form>
          <ErrorText error={create.error} />
          {created ? (
            <SecretBox
              secret={created.token}
              note={
                <>
                  The device token of <strong>{created.station.name}</strong>, shown only now: the
                  station's agent connects with it (<code>SPOOL_DEVICE_TOKEN</code>, see the agent's
                  documentation).
                </>
              }
            />
          ) : null}
        </section>
      ) : null}
      <ErrorText error={r.error} />
      {r.data && items.length === 0 ? <Empty>No stations yet.</Empty> : null}
      {items.length > 0 ? (
        <div class="table-wrap">
          <table class="stack" aria-label="Stations">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Location</th>
                <th scope="col">Last seen</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.id}>
                  <th scope="row">
                    {s.name} <RegionTag region={s.region} />
                  </th>
                  <td data-label="Status">
                    <Status status={s.online ? 'online' : 'offline'} />
                    {s.token_revoked_at ? (
                      <span
                        class="tag"
                        title="Its agent is refused until the station is given a new token (by the operator: spool admin station rotate-token)"
                      >
                        token revoked
                      </span>
                    ) : null}
                  </td>
                  <td data-label="Location">
                    {locationName(s.location_id) || <span class="muted">—</span>}
                  </td>
                  <td data-label="Last seen">
                    <Time at={s.last_seen_at} empty="never" />
                  </td>
                  <td data-label="Created">
                    <Time at={s.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}

/** The home region, shown only where an installation has several (one region is `default`). */
function RegionTag({ region }: { region: string }) {
  return region && region !== 'default' ? <span class="tag">region {region}</span> : null;
}
