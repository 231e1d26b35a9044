/** Overview, printers and stations. */
import type { JSX } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { DiagnosisView } from '../../../lib/contracts/diagnosis-view.js';
import { del, enc, get, patch, post, query } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { Field, Form, FormButtons, Options, Panel } from '../forms.js';
import { JobsPerDaySection } from '../jobs-chart.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { urlPager, useSearch } from '../router.js';
import { ActionsCell, DangerButton, Pager, Table } from '../table.js';
import type { Location, LocationPage, Overview, Printer, PrinterPage, Station } from '../types.js';
import { ErrorText, PageHeader, SecretBox, Status, Time } from '../ui.js';
import { StationDiagnosis } from './station-diagnosis.js';

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
function printerStatus(p: Printer): string {
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
      <JobsPerDaySection orgId={org.id} />
    </>
  );
}

export function PrintersPage(): JSX.Element {
  const { org } = useApp();
  // The page is in the URL, as the job list's is.
  const { cursor, pager } = urlPager(useSearch(), {});
  const r = useResource(
    () => get<PrinterPage>(`/v1/orgs/${enc(org.id)}/printers${query({ limit: '100', cursor })}`),
    [org.id, cursor],
  );
  const stations = useResource(
    () => get<{ items: Station[] }>(`/console/v1/orgs/${enc(org.id)}/stations`),
    [org.id],
  );
  useLive((ev) => ev.type.startsWith('printer.') || ev.type.startsWith('station.'), r.reloadSoon);
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
      <Table
        label="Printers"
        columns={['Name', 'Status', 'Detail', 'Station', 'Capabilities', 'Updated']}
        actions={canDelete}
        rows={printers}
        empty="No printers yet: start an agent on a station (see Stations)."
        loaded={r.data !== undefined}
        row={(p) => (
          <tr key={p.id}>
            <th scope="row" id={`printer-${p.id}`}>
              {p.name}
            </th>
            <td data-label="Status">
              <Status status={printerStatus(p)} />
            </td>
            <td data-label="Detail">
              {printerStatus(p) === p.status ? null : (
                <span class="muted">its station is offline; it last reported {p.status}. </span>
              )}
              {p.detail || (printerStatus(p) === p.status ? <span class="muted">—</span> : null)}
            </td>
            <td data-label="Station">
              {stationName(p.station_id)}{' '}
              {p.station_online ? null : <span class="tag">station offline</span>}
              <RegionTag region={p.region} />
            </td>
            <td class="small" data-label="Capabilities">
              {[
                p.capabilities.paper_sizes.join(', '),
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
              <ActionsCell>
                {/* Its waiting jobs fail; a printer its agent still reports comes back. */}
                <DangerButton
                  busy={remove.busy}
                  describedBy={`printer-${p.id}`}
                  title={
                    p.status === 'removed'
                      ? 'Its agent no longer reports it'
                      : 'Its agent still reports it: it comes back, under a new id, when the agent next sends its printers (a change of status, a reconnect). Remove it from the agent first.'
                  }
                  onClick={() => void askRemove(p)}
                >
                  Delete printer
                </DangerButton>
              </ActionsCell>
            ) : null}
          </tr>
        )}
      />
      <Pager {...pager} next={r.data?.next_cursor} />
    </>
  );
}

/** Moves `station` to another location of the organization, or out of its location. */
function MoveStationForm(props: {
  orgId: string;
  station: Station;
  locations: readonly Location[];
  onMoved(): Promise<void>;
  onClose(): void;
}): JSX.Element {
  const { station } = props;
  const [to, setTo] = useState(station.location_id ?? '');
  const select = useRef<HTMLSelectElement>(null);
  useLayoutEffect(() => select.current?.focus(), []);
  const move = useAction(async () => {
    await patch(`/console/v1/orgs/${enc(props.orgId)}/stations/${enc(station.id)}`, {
      location_id: to === '' ? null : to,
    });
    await props.onMoved();
  });
  return (
    <Panel id="move-station" title={`Move station ${station.name}`}>
      <Form class="inline-form" onSubmit={move.run}>
        <label>
          To location
          <select ref={select} value={to} onChange={(e) => setTo(e.currentTarget.value)}>
            <Options items={props.locations} empty="None" />
          </select>
        </label>
        <FormButtons
          submit="Move station"
          disabled={move.busy || to === (station.location_id ?? '')}
          back="Don't move"
          onBack={props.onClose}
        />
      </Form>
      <ErrorText error={move.error} />
    </Panel>
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
    () => get<LocationPage>(`/v1/orgs/${enc(org.id)}/locations?limit=200`),
    [org.id],
  );
  useLive('station.', r.reloadSoon);
  useLive('location.', locations.reloadSoon);
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
  const [diagnosis, setDiagnosis] = useState<{ name: string; diagnosis: DiagnosisView } | null>(
    null,
  );
  const diagnose = useAction(async (s: Station) => {
    setDiagnosis(null);
    const res = await post<{ diagnosis: DiagnosisView }>(
      `/console/v1/orgs/${enc(org.id)}/stations/${enc(s.id)}/diagnose`,
    );
    setDiagnosis({ name: s.name, diagnosis: res.diagnosis });
  });
  const locationName = (id: string | null) =>
    id ? (locations.data?.locations.find((l) => l.id === id)?.name ?? id) : '';
  const items = r.data?.items ?? [];
  /** The station whose move is being chosen, as the list last read it. */
  const [moving, setMoving] = useState<string | null>(null);
  const movingStation = items.find((s) => s.id === moving);
  return (
    <>
      <PageHeader title="Stations" />
      <p class="lead">
        A station is a computer running <code>spool agent</code> with its device token; it prints
        for the printers attached to it.
      </p>
      {canCreate ? (
        <Panel id="new-station" title="New station">
          <Form class="inline-form" onSubmit={create.run}>
            <Field label="Name" required maxLength={200} value={name} onValue={setName} />
            <label>
              Location
              <select value={locationId} onChange={(e) => setLocationId(e.currentTarget.value)}>
                <Options items={locations.data?.locations ?? []} empty="None" />
              </select>
            </label>
            <button type="submit" disabled={create.busy}>
              Create station
            </button>
          </Form>
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
        </Panel>
      ) : null}
      {canCreate && movingStation ? (
        <MoveStationForm
          key={movingStation.id}
          orgId={org.id}
          station={movingStation}
          locations={locations.data?.locations ?? []}
          onClose={() => setMoving(null)}
          onMoved={async () => {
            setMoving(null);
            await r.reload();
          }}
        />
      ) : null}
      <ErrorText error={r.error} />
      <ErrorText error={diagnose.error} />
      <Table
        label="Stations"
        columns={['Name', 'Status', 'Location', 'Last seen', 'Created']}
        actions={canCreate}
        rows={items}
        empty="No stations yet."
        loaded={r.data !== undefined}
        row={(s) => (
          <tr key={s.id}>
            <th scope="row" id={`station-${s.id}`}>
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
              {s.update_state && s.update_state !== 'current' ? (
                <span class="tag" title={`Its agent's update to ${s.update_version ?? '?'}`}>
                  update {s.update_version}: {s.update_state}
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
            {canCreate ? (
              <ActionsCell>
                <button
                  type="button"
                  disabled={diagnose.busy || !s.online}
                  aria-describedby={`station-${s.id}`}
                  title={
                    s.online
                      ? 'Ask its agent for its versions, printers and last log lines'
                      : 'Its agent is not linked'
                  }
                  onClick={() => void diagnose.run(s)}
                >
                  Diagnose
                </button>{' '}
                <button
                  type="button"
                  class="secondary"
                  aria-describedby={`station-${s.id}`}
                  title="Put it in another location, or in none"
                  onClick={() => setMoving(s.id)}
                >
                  Move
                </button>
              </ActionsCell>
            ) : null}
          </tr>
        )}
      />
      {diagnosis ? <StationDiagnosis {...diagnosis} /> : null}
    </>
  );
}

/** The home region, shown only where an installation has several (one region is `default`). */
function RegionTag({ region }: { region: string }) {
  return region && region !== 'default' ? <span class="tag">region {region}</span> : null;
}
