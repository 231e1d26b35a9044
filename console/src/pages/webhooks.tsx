/** Webhook endpoints: create (secret shown once), rotate, send test, the delivery log, resend. */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { PUBLISHED_EVENT_TYPES } from '../../../lib/contracts/event-types.js';
import { del, enc, get, patch, post, query } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { CheckList, Field, Form, named, Options, Panel } from '../forms.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { Link, navigate, setSearch, urlPager, useSearch } from '../router.js';
import { Pager, Table } from '../table.js';
import type {
  CreatedEndpoint,
  DeliveryPage,
  DeliveryState,
  Endpoint,
  EndpointList,
  RotatedSecret,
} from '../types.js';
import { Empty, ErrorText, PageHeader, SecretBox, Status, Time } from '../ui.js';

/** The events an endpoint subscribes to, or every one (`*`). */
function EventChecks(props: { value: string[]; onChange(v: string[]): void }): JSX.Element {
  return (
    <CheckList
      legend="Events"
      every="Every event"
      choices={PUBLISHED_EVENT_TYPES}
      value={props.value}
      onChange={props.onChange}
    />
  );
}

interface Shown {
  secret: string;
  note: ComponentChildren;
}

export function WebhooksPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const r = useResource(
    () => get<EndpointList>(`/v1/orgs/${enc(org.id)}/webhooks?limit=200`),
    [org.id],
  );
  // Endpoints made, changed (a disabling, a failing streak) or deleted elsewhere show up at once.
  useLive('webhook_endpoint.', r.reloadSoon);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>(['job.printed', 'job.failed']);
  // One secret on the page at a time: the new endpoint's, or the one a rotation made.
  const [shown, setShown] = useState<Shown | null>(null);
  const create = useAction(async () => {
    const body: Record<string, unknown> = { url, events };
    if (description.trim()) body.description = description.trim();
    const res = await post<CreatedEndpoint>(`/v1/orgs/${enc(org.id)}/webhooks`, body);
    setShown({
      secret: res.secret,
      note: (
        <>
          The signing secret of <strong>{res.endpoint.url}</strong>. Copy it now: it is not shown
          again (Rotate secret makes a new one).
        </>
      ),
    });
    setUrl('');
    setDescription('');
    await r.reload();
  });
  const items = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="Webhooks" />
      <p class="lead">
        Spool sends signed HTTP requests to your endpoints when jobs, stations and printers change.
      </p>
      {canWrite ? (
        <Panel id="new-endpoint" title="New endpoint">
          <Form class="stack-form" onSubmit={create.run}>
            <div class="row">
              <Field
                label="URL"
                type="url"
                required
                maxLength={2048}
                placeholder="https://example.com/spool"
                value={url}
                onValue={setUrl}
              />
              <Field
                label="Description"
                maxLength={500}
                value={description}
                onValue={setDescription}
              />
            </div>
            <EventChecks value={events} onChange={setEvents} />
            <ErrorText error={create.error} />
            <div>
              <button type="submit" disabled={create.busy}>
                Create endpoint
              </button>
            </div>
          </Form>
        </Panel>
      ) : null}
      {shown ? <SecretBox secret={shown.secret} note={shown.note} /> : null}
      <ErrorText error={r.error} />
      {r.data && items.length === 0 ? <Empty>No endpoints yet.</Empty> : null}
      {items.map((e) => (
        <EndpointPanel
          key={e.id}
          id={e.id}
          initial={e}
          onSecret={setShown}
          onDeleted={() => {
            setShown(null);
            void r.reload();
          }}
        />
      ))}
    </>
  );
}

/** One endpoint on a page of its own (`/console/webhooks/{id}`). */
export function EndpointPage(props: { id: string }): JSX.Element {
  const [shown, setShown] = useState<Shown | null>(null);
  return (
    <>
      <p class="crumbs">
        <Link href="/webhooks">← Back to the list</Link>
      </p>
      <PageHeader title="Webhook endpoint" />
      {shown ? <SecretBox secret={shown.secret} note={shown.note} /> : null}
      <EndpointPanel
        id={props.id}
        logInUrl
        onSecret={setShown}
        onDeleted={() => navigate('/webhooks')}
      />
    </>
  );
}

const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'succeeded', 'failed'];

/**
 * An endpoint: its settings, its actions and its delivery log with every attempt. With `logInUrl`
 * (the endpoint's own page), the log's state filter and page are in the URL, as the job list's
 * are; on the list of endpoints each panel keeps its own.
 */
function EndpointPanel(props: {
  id: string;
  initial?: Endpoint;
  logInUrl?: boolean;
  onSecret(shown: Shown): void;
  onDeleted(): void;
}): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const base = `/v1/orgs/${enc(org.id)}/webhooks/${enc(props.id)}`;
  const r = useResource(() => get<{ endpoint: Endpoint }>(base), [base]);
  useLive(
    (ev) =>
      ev.type.startsWith('webhook_endpoint.') &&
      (ev.data.data?.endpoint as { id?: string } | undefined)?.id === props.id,
    r.reloadSoon,
  );
  const [cursors, setCursors] = useState<string[]>([]);
  const [stateHere, setStateHere] = useState('');
  const search = useSearch();
  // A state the log does not know (a hand-edited link) shows every delivery.
  const inLink = search.get('state') ?? '';
  const state = props.logInUrl
    ? (DELIVERY_STATES as readonly string[]).includes(inLink)
      ? inLink
      : ''
    : stateHere;
  const inUrl = urlPager(search, { state });
  const cursor = props.logInUrl ? inUrl.cursor : (cursors[cursors.length - 1] ?? '');
  const pager = props.logInUrl
    ? inUrl.pager
    : {
        hasPrev: cursors.length > 0,
        onPrev: () => setCursors(cursors.slice(0, -1)),
        onNext: (c: string) => setCursors([...cursors, c]),
      };
  const showState = (s: string) => {
    if (props.logInUrl) return setSearch({ state: s });
    setStateHere(s);
    setCursors([]);
  };
  const deliveries = useResource(
    () => get<DeliveryPage>(`${base}/deliveries${query({ limit: '10', cursor, state })}`),
    [base, cursor, state],
  );
  // Deliveries follow events: re-read the log when something happens in the organization.
  useLive(
    () => true,
    () => {
      if (cursor === '') deliveries.reloadSoon();
    },
  );
  // Attempts are not events of the stream: while a delivery is still pending, look again shortly.
  const pending = (deliveries.data?.items ?? []).some((d) => d.state === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = window.setTimeout(() => deliveries.reloadSoon(), 1000);
    return () => window.clearTimeout(timer);
  }, [deliveries.data, pending]);
  const [events, setEvents] = useState<string[] | null>(null);
  const ep = r.data?.endpoint ?? props.initial;
  const act = useAction(async (what: 'rotate' | 'test' | 'enable' | 'disable' | 'delete') => {
    if (what === 'rotate') {
      const res = await post<RotatedSecret>(`${base}/rotate`);
      props.onSecret({
        secret: res.secret,
        note: (
          <>
            The new signing secret of <strong>{ep?.url}</strong>, shown only now. The previous one
            keeps working for a while, so that your receiver can switch.
          </>
        ),
      });
    } else if (what === 'test') {
      await post(`${base}/test`);
      await deliveries.reload();
    } else if (what === 'delete') {
      await del(base);
      props.onDeleted();
      return;
    } else {
      await patch(base, { enabled: what === 'enable' });
    }
    await r.reload();
  });
  const saveEvents = useAction(async () => {
    if (!events) return;
    await patch(base, { events });
    setEvents(null);
    await r.reload();
  });
  const resend = useAction(async (id: string) => {
    await post(`${base}/deliveries/${enc(id)}/resend`);
    await deliveries.reload();
  });
  const confirm = useConfirm();
  const askRotate = async () => {
    const ok = await confirm.ask({
      title: `Rotate the signing secret of ${ep?.url ?? 'this endpoint'}?`,
      body: 'Spool makes a new secret, shown once, and signs Service-Signature with it from the next attempt on. For a grace period (24 hours unless Spool is set otherwise) the Standard Webhooks header webhook-signature also carries a signature with the current secret, so that a receiver checking that one can switch.',
      confirm: 'Rotate secret',
    });
    if (ok) await act.run('rotate');
  };
  const askDelete = async () => {
    const ok = await confirm.ask({
      title: `Delete the endpoint ${ep?.url ?? ''}?`,
      body: 'Spool stops sending it events at once and deletes its delivery log with every attempt. This cannot be undone.',
      confirm: 'Delete endpoint',
    });
    if (ok) await act.run('delete');
  };
  const askDisable = async () => {
    const ok = await confirm.ask({
      title: `Disable the endpoint ${ep?.url ?? ''}?`,
      body: 'Spool stops sending it events, and its pending deliveries end as failed (resend them after enabling it again).',
      confirm: 'Disable endpoint',
    });
    if (ok) await act.run('disable');
  };
  const headingId = `endpoint-${props.id}`;
  return (
    <section class="panel endpoint" aria-labelledby={headingId}>
      <div class="endpoint-head">
        <h2 id={headingId} class="endpoint-url">
          {ep ? ep.url : 'Endpoint'}
        </h2>
        {ep ? <Status status={ep.enabled ? 'enabled' : 'disabled'} /> : null}
      </div>
      {confirm.dialog}
      <ErrorText error={r.error || act.error} />
      {ep ? (
        <>
          <p class="small muted endpoint-meta">
            {ep.description ? <>{ep.description} · </> : null}
            events <code>{ep.events.join(', ')}</code>
            {ep.disabled_reason ? <> · disabled ({ep.disabled_reason})</> : null}
            {ep.failing_since ? (
              <>
                {' '}
                · failing since <Time at={ep.failing_since} />
              </>
            ) : null}{' '}
            · secret rotated <Time at={ep.secret_rotated_at} empty="never" /> · created{' '}
            <Time at={ep.created_at} />
          </p>
          {canWrite ? (
            <div class="endpoint-actions">
              <button
                type="button"
                class="secondary"
                disabled={act.busy}
                onClick={() => void act.run('test')}
              >
                Send test
              </button>
              <button
                type="button"
                class="secondary"
                disabled={act.busy}
                onClick={() => void (ep.enabled ? askDisable() : act.run('enable'))}
              >
                {ep.enabled ? 'Disable' : 'Enable'}
              </button>
              {/* Not the primary action: a receiver that is not told of the new secret breaks. */}
              <button
                type="button"
                class="danger"
                disabled={act.busy}
                onClick={() => void askRotate()}
              >
                Rotate secret
              </button>
              <button
                type="button"
                class="danger"
                disabled={act.busy}
                onClick={() => void askDelete()}
              >
                Delete endpoint
              </button>
            </div>
          ) : null}
          {canWrite ? (
            <details class="filters">
              <summary>Change events</summary>
              <Form class="stack-form" onSubmit={saveEvents.run}>
                <EventChecks value={events ?? ep.events} onChange={setEvents} />
                <ErrorText error={saveEvents.error} />
                <div>
                  <button type="submit" class="secondary" disabled={!events || saveEvents.busy}>
                    Save events
                  </button>
                </div>
              </Form>
            </details>
          ) : null}
        </>
      ) : null}
      <div class="section-head">
        <h3>Delivery log</h3>
        <label class="inline">
          State
          <select value={state} onChange={(e) => showState(e.currentTarget.value)}>
            <Options items={named(DELIVERY_STATES)} empty="All" />
          </select>
        </label>
      </div>
      <ErrorText error={deliveries.error || resend.error} />
      {deliveries.data && deliveries.data.items.length === 0 ? (
        <p class="muted">No deliveries yet. Send test sends a ping.</p>
      ) : null}
      <ul class="deliveries">
        {(deliveries.data?.items ?? []).map((d) => (
          <li key={d.id} class="delivery">
            <div class="delivery-head">
              <code>{d.event_type}</code> <Status status={d.state} />
              <span class="small muted">
                {' '}
                {d.attempt_count} attempt{d.attempt_count === 1 ? '' : 's'} · created{' '}
                <Time at={d.created_at} />
                {d.next_attempt_at ? (
                  <>
                    {' '}
                    · next <Time at={d.next_attempt_at} />
                  </>
                ) : null}
              </span>
              {canWrite ? (
                <button
                  type="button"
                  class="secondary small-button"
                  disabled={resend.busy}
                  onClick={() => void resend.run(d.id)}
                >
                  Resend
                </button>
              ) : null}
            </div>
            {d.attempts.length > 0 ? (
              <Table
                label={`Attempts of ${d.event_type} ${d.id}`}
                class="attempts"
                wrap="table-scroll"
                columns={['#', 'At', 'Outcome', 'HTTP', 'Time', 'Error']}
                rows={d.attempts}
                row={(a) => (
                  <tr key={a.number}>
                    <th scope="row">
                      <span class="visually-hidden attempt-word">Attempt </span>
                      {a.number}
                    </th>
                    <td data-label="At">
                      <Time at={a.at} />
                    </td>
                    <td data-label="Outcome">
                      <Status status={a.outcome} />
                    </td>
                    <td data-label="HTTP">{a.status_code ?? '—'}</td>
                    <td data-label="Time">{a.duration_ms == null ? '—' : `${a.duration_ms} ms`}</td>
                    <td data-label="Error" class="small wrap-anywhere">
                      {a.error || '—'}
                    </td>
                  </tr>
                )}
              />
            ) : null}
          </li>
        ))}
      </ul>
      <Pager {...pager} next={deliveries.data?.next_cursor} />
    </section>
  );
}
