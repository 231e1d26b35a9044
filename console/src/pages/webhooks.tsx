/** Webhook endpoints: create (secret shown once), rotate, send test, the delivery log, resend. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type Delivery, del, type Endpoint, enc, get, patch, post, query } from '../api.js';
import { useLive } from '../live.js';
import { Link, navigate } from '../router.js';
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
  useResource,
} from '../ui.js';
import { Pager } from './fleet.js';

const EVENTS = [
  'job.created',
  'job.printed',
  'job.failed',
  'job.cancelled',
  'job.retried',
  'station.online',
  'station.offline',
  'printer.status',
];

function EventChecks(props: { value: string[]; onChange(v: string[]): void }): JSX.Element {
  const all = props.value.includes('*');
  return (
    <fieldset>
      <legend>Events</legend>
      <div class="checks">
        <label class="check">
          <input
            type="checkbox"
            checked={all}
            onChange={(e) => props.onChange(e.currentTarget.checked ? ['*'] : [])}
          />
          <span>
            Every event (<code>*</code>)
          </span>
        </label>
        {EVENTS.map((t) => (
          <label class="check" key={t}>
            <input
              type="checkbox"
              disabled={all}
              checked={all || props.value.includes(t)}
              onChange={(e) =>
                props.onChange(
                  e.currentTarget.checked
                    ? [...props.value, t]
                    : props.value.filter((x) => x !== t),
                )
              }
            />
            <code>{t}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function WebhooksPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const r = useResource(
    () => get<{ items: Endpoint[] }>(`/v1/orgs/${enc(org.id)}/webhooks?limit=200`),
    [org.id],
  );
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>(['job.printed', 'job.failed']);
  const [created, setCreated] = useState<{ endpoint: Endpoint; secret: string } | null>(null);
  const create = useAction(async () => {
    const body: Record<string, unknown> = { url, events };
    if (description.trim()) body.description = description.trim();
    const res = await post<{ endpoint: Endpoint; secret: string }>(
      `/v1/orgs/${enc(org.id)}/webhooks`,
      body,
    );
    setCreated(res);
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
        <section class="panel" aria-labelledby="new-endpoint">
          <h2 id="new-endpoint">New endpoint</h2>
          <form
            class="stack-form"
            onSubmit={(e) => {
              e.preventDefault();
              void create.run();
            }}
          >
            <div class="row">
              <label>
                URL
                <input
                  type="url"
                  required
                  maxLength={2048}
                  placeholder="https://example.com/spool"
                  value={url}
                  onInput={(e) => setUrl(e.currentTarget.value)}
                />
              </label>
              <label>
                Description
                <input
                  maxLength={500}
                  value={description}
                  onInput={(e) => setDescription(e.currentTarget.value)}
                />
              </label>
            </div>
            <EventChecks value={events} onChange={setEvents} />
            <ErrorText error={create.error} />
            <div>
              <button type="submit" disabled={create.busy}>
                Create endpoint
              </button>
            </div>
          </form>
          {created ? (
            <SecretBox
              secret={created.secret}
              note={
                <>
                  The signing secret of <strong>{created.endpoint.url}</strong>. Copy it now: it is
                  not shown again (Rotate secret makes a new one).
                </>
              }
            />
          ) : null}
        </section>
      ) : null}
      <ErrorText error={r.error} />
      {r.data && items.length === 0 ? <Empty>No endpoints yet.</Empty> : null}
      {items.length > 0 ? (
        <div class="table-wrap">
          <table aria-label="Endpoints">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {items.map((e) => (
                <tr key={e.id}>
                  <th scope="row">
                    <Link href={`/webhooks/${e.id}`}>{e.url}</Link>
                    {e.description ? <div class="small muted">{e.description}</div> : null}
                  </th>
                  <td class="small">{e.events.join(', ')}</td>
                  <td>
                    <Status status={e.enabled ? 'enabled' : 'disabled'} />
                    {e.disabled_reason ? (
                      <span class="small muted"> ({e.disabled_reason})</span>
                    ) : null}
                  </td>
                  <td>
                    <Time at={e.created_at} />
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

export function EndpointPage(props: { id: string }): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const base = `/v1/orgs/${enc(org.id)}/webhooks/${enc(props.id)}`;
  const r = useResource(() => get<{ endpoint: Endpoint }>(base), [base]);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1] ?? '';
  const [state, setState] = useState('');
  const deliveries = useResource(
    () =>
      get<{ items: Delivery[]; next_cursor: string }>(
        `${base}/deliveries${query({ limit: '25', cursor, state })}`,
      ),
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
  const [secret, setSecret] = useState('');
  const [events, setEvents] = useState<string[] | null>(null);
  const act = useAction(async (what: 'rotate' | 'test' | 'enable' | 'disable' | 'delete') => {
    if (what === 'rotate') {
      const res = await post<{ secret: string }>(`${base}/rotate`);
      setSecret(res.secret);
    } else if (what === 'test') {
      await post(`${base}/test`);
      await deliveries.reload();
    } else if (what === 'delete') {
      await del(base);
      navigate('/webhooks');
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
  const ep = r.data?.endpoint;
  return (
    <>
      <p class="crumbs">
        <Link href="/webhooks">← Back to the list</Link>
      </p>
      <PageHeader title={ep ? ep.url : 'Endpoint'}>
        {ep && canWrite ? (
          <>
            <button type="button" disabled={act.busy} onClick={() => void act.run('rotate')}>
              Rotate secret
            </button>
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
              onClick={() => void act.run(ep.enabled ? 'disable' : 'enable')}
            >
              {ep.enabled ? 'Disable' : 'Enable'}
            </button>
            <button
              type="button"
              class="danger"
              disabled={act.busy}
              onClick={() => void act.run('delete')}
            >
              Delete endpoint
            </button>
          </>
        ) : null}
      </PageHeader>
      <ErrorText error={r.error || act.error} />
      {secret ? (
        <SecretBox
          secret={secret}
          note="The new signing secret, shown only now. The previous one keeps working for a while so that your receiver can switch."
        />
      ) : null}
      {ep ? (
        <section class="panel" aria-labelledby="ep-details">
          <h2 id="ep-details">Endpoint</h2>
          <dl class="details">
            <dt>State</dt>
            <dd>
              <Status status={ep.enabled ? 'enabled' : 'disabled'} />
              {ep.disabled_reason ? ` (${ep.disabled_reason})` : ''}
              {ep.failing_since ? (
                <span class="muted">
                  {' '}
                  failing since <Time at={ep.failing_since} />
                </span>
              ) : null}
            </dd>
            <dt>Description</dt>
            <dd>{ep.description || '—'}</dd>
            <dt>Secret rotated</dt>
            <dd>
              <Time at={ep.secret_rotated_at} empty="never" />
            </dd>
          </dl>
          {canWrite ? (
            <form
              class="stack-form"
              onSubmit={(e) => {
                e.preventDefault();
                void saveEvents.run();
              }}
            >
              <EventChecks value={events ?? ep.events} onChange={setEvents} />
              <ErrorText error={saveEvents.error} />
              <div>
                <button type="submit" class="secondary" disabled={!events || saveEvents.busy}>
                  Save events
                </button>
              </div>
            </form>
          ) : (
            <p>
              Events: <code>{ep.events.join(', ')}</code>
            </p>
          )}
        </section>
      ) : null}
      <section aria-labelledby="ep-deliveries">
        <div class="section-head">
          <h2 id="ep-deliveries">Delivery log</h2>
          <label class="inline">
            State
            <select
              value={state}
              onChange={(e) => {
                setState(e.currentTarget.value);
                setCursors([]);
              }}
            >
              <option value="">All</option>
              <option value="pending">pending</option>
              <option value="succeeded">succeeded</option>
              <option value="failed">failed</option>
            </select>
          </label>
        </div>
        <ErrorText error={deliveries.error || resend.error} />
        {deliveries.data && deliveries.data.items.length === 0 ? (
          <Empty>No deliveries yet. Send test sends a ping.</Empty>
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
                <table class="attempts" aria-label={`Attempts of ${d.event_type} ${d.id}`}>
                  <thead>
                    <tr>
                      <th scope="col">#</th>
                      <th scope="col">At</th>
                      <th scope="col">Outcome</th>
                      <th scope="col">HTTP</th>
                      <th scope="col">Time</th>
                      <th scope="col">Error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.attempts.map((a) => (
                      <tr key={a.number}>
                        <td>{a.number}</td>
                        <td>
                          <Time at={a.at} />
                        </td>
                        <td>
                          <Status status={a.outcome} />
                        </td>
                        <td>{a.status_code ?? '—'}</td>
                        <td>{a.duration_ms == null ? '—' : `${a.duration_ms} ms`}</td>
                        <td class="small">{a.error || ''}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : null}
            </li>
          ))}
        </ul>
        <Pager
          hasPrev={cursors.length > 0}
          next={deliveries.data?.next_cursor}
          onPrev={() => setCursors(cursors.slice(0, -1))}
          onNext={(c) => setCursors([...cursors, c])}
        />
      </section>
    </>
  );
}
