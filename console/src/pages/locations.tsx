/**
 * An organization's locations: the places its stations are in. The list, with the number of
 * stations in each, and for admins create, edit and delete (which Spool refuses while a station is
 * in the location).
 */
import type { JSX } from 'preact';
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { del, enc, get, patch, post } from '../api.js';
import { useApp, useCan } from '../app.js';
import { EditDeleteCell, useEditing } from '../editing.js';
import { Field, Form, FormButtons, Panel } from '../forms.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { Table } from '../table.js';
import type { ConsoleLocation } from '../types.js';
import { ErrorText, PageHeader, Time } from '../ui.js';

/** What the form edits, as the API takes it. */
interface Draft {
  name: string;
  address: string;
  timezone: string;
}

function draftOf(location: ConsoleLocation | undefined): Draft {
  return {
    name: location?.name ?? '',
    address: location?.address ?? '',
    timezone: location?.timezone ?? '',
  };
}

/** The fields of `draft` that differ from `location`'s, so that a change names only those. */
function changed(location: ConsoleLocation, draft: Draft): Partial<Draft> {
  return Object.fromEntries(
    (Object.keys(draft) as (keyof Draft)[])
      .filter((k) => draft[k] !== location[k])
      .map((k) => [k, draft[k]]),
  );
}

/** The form that creates a location, or edits `location`; `onSaved` hears it saved. */
function LocationForm(props: {
  orgId: string;
  location?: ConsoleLocation;
  onSaved(): Promise<void>;
  onClose(): void;
}): JSX.Element {
  const { location } = props;
  const [draft, setDraft] = useState<Draft>(() => draftOf(location));
  // The browser's time zones, offered as the field is typed in; Spool checks the name itself.
  const zones = useMemo(() => Intl.supportedValuesOf('timeZone'), []);
  const box = useRef<HTMLDivElement>(null);
  // The person opened the form to fill it in: its first field has the focus, given as the form
  // appears (a layout effect), so that nothing typed meanwhile lands in a field it then leaves.
  useLayoutEffect(() => box.current?.querySelector('input')?.focus(), [location?.id]);
  const save = useAction(async () => {
    const next = {
      name: draft.name.trim(),
      address: draft.address.trim(),
      timezone: draft.timezone.trim(),
    };
    const base = `/console/v1/orgs/${enc(props.orgId)}/locations`;
    if (!location) await post(base, next);
    else {
      const changes = changed(location, next);
      // Saved as it was: nothing to send.
      if (Object.keys(changes).length > 0) await patch(`${base}/${enc(location.id)}`, changes);
    }
    await props.onSaved();
  });
  return (
    <Panel id="location-form" title={location ? `Edit location ${location.name}` : 'New location'}>
      <div ref={box}>
        <Form class="stack-form" onSubmit={save.run}>
          <div class="row">
            <Field
              label="Name"
              required
              maxLength={200}
              value={draft.name}
              placeholder="e.g. Berlin warehouse"
              onValue={(name) => setDraft({ ...draft, name })}
            />
            <Field
              label="Address"
              maxLength={200}
              value={draft.address}
              onValue={(address) => setDraft({ ...draft, address })}
            />
            <Field
              label="Time zone"
              maxLength={64}
              list="time-zones"
              autocomplete="off"
              value={draft.timezone}
              placeholder="e.g. Europe/Berlin"
              onValue={(timezone) => setDraft({ ...draft, timezone })}
              hint={<span class="small muted">An IANA time zone; empty: none.</span>}
            />
          </div>
          <datalist id="time-zones">
            {zones.map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
          <ErrorText error={save.error} />
          <FormButtons
            submit={location ? 'Save location' : 'Create location'}
            disabled={save.busy}
            back="Cancel"
            onBack={props.onClose}
          />
        </Form>
      </div>
    </Panel>
  );
}

function stationsText(n: number): string {
  return n === 1 ? '1 station' : `${n} stations`;
}

export function LocationsPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('admin');
  const r = useResource(
    () => get<{ items: ConsoleLocation[] }>(`/console/v1/orgs/${enc(org.id)}/locations`),
    [org.id],
  );
  useLive('location.', r.reloadSoon);
  // A station made, moved or deleted changes the counts; its going on- or offline does not.
  useLive(
    (ev) =>
      ev.type === 'station.created' ||
      ev.type === 'station.updated' ||
      ev.type === 'station.deleted',
    r.reloadSoon,
  );
  const editing = useEditing<ConsoleLocation>({
    remove: (id) => del(`/console/v1/orgs/${enc(org.id)}/locations/${enc(id)}`),
    reload: r.reload,
    confirmOf: (l) => ({
      title: `Delete the location ${l.name}?`,
      body: (
        <p>
          {l.station_count === 0
            ? 'No station is in it.'
            : `${stationsText(l.station_count)} ${l.station_count === 1 ? 'is' : 'are'} in it: Spool refuses until ${l.station_count === 1 ? 'it is' : 'they are'} moved to another location (on the Stations page) or deleted.`}
        </p>
      ),
      confirm: 'Delete location',
    }),
  });
  const locations = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="Locations">
        {canWrite && !editing.creating ? (
          <button type="button" onClick={editing.create}>
            Create location
          </button>
        ) : null}
      </PageHeader>
      {editing.dialog}
      <p class="lead">
        A location is a place your stations are in, such as a shop or a warehouse. A station is put
        in one when it is created, or moved to one on the Stations page.
      </p>
      {editing.form && canWrite ? (
        <LocationForm
          key={editing.form.item?.id ?? 'new'}
          orgId={org.id}
          location={editing.form.item}
          onClose={editing.close}
          onSaved={editing.saved}
        />
      ) : null}
      <ErrorText error={r.error} />
      <ErrorText error={editing.removing.error} />
      <Table
        label="Locations"
        columns={['Name', 'Address', 'Time zone', 'Stations', 'Created']}
        actions={canWrite}
        rows={locations}
        empty={
          canWrite
            ? 'No locations yet: create one, then put stations in it on the Stations page.'
            : 'No locations yet.'
        }
        loaded={r.data !== undefined}
        row={(l) => (
          <tr key={l.id}>
            <th scope="row" id={`location-${l.id}`}>
              {l.name}
            </th>
            <td data-label="Address">{l.address || <span class="muted">—</span>}</td>
            <td data-label="Time zone">{l.timezone || <span class="muted">—</span>}</td>
            <td data-label="Stations">{l.station_count}</td>
            <td data-label="Created">
              <Time at={l.created_at} />
            </td>
            {canWrite ? (
              <EditDeleteCell
                describedBy={`location-${l.id}`}
                busy={editing.removing.busy}
                onEdit={() => editing.edit(l)}
                onDelete={() => void editing.askRemove(l)}
                deleteLabel="Delete location"
              />
            ) : null}
          </tr>
        )}
      />
    </>
  );
}
