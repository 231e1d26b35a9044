/** The job list (the API's filters and counts, cursor paging) and a job's page. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { enc, fetchBlob, get, post, query } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { localToRfc3339, rfc3339ToLocal } from '../dates.js';
import { Field, Form, FormButtons, Options } from '../forms.js';
import { jobOf, useLive } from '../live.js';
import { messageOf, useAction, useResource } from '../resource.js';
import { Link, navigate, setSearch, urlPager, useSearch } from '../router.js';
import { Pager, Table } from '../table.js';
import type {
  Job,
  JobList,
  JobStatus,
  JobWithEvents,
  Member,
  PrinterPage,
  Station,
} from '../types.js';
import { ErrorText, PageHeader, Status, short, Time } from '../ui.js';
import { MOVABLE, MoveForm, Placement, RoutingDetails, withPrinterNames } from './job-routing.js';
import { usePools } from './pools.js';

/** The statuses in the order the list's filter offers them: the usual path first. */
const STATUSES: readonly JobStatus[] = [
  'queued',
  'sent',
  'printed',
  'failed',
  'cancelled',
  'scheduled',
  'held',
];

/** The list's filters, as in its URL and the API's query; times are RFC 3339. */
interface Filters {
  status: string[];
  reference: string;
  printer_id: string;
  station_id: string;
  created_after: string;
  created_before: string;
}
const NO_FILTERS: Filters = {
  status: [],
  reference: '',
  printer_id: '',
  station_id: '',
  created_after: '',
  created_before: '',
};

function filtersOf(q: URLSearchParams): Filters {
  return {
    status: (q.get('status') ?? '').split(',').filter(Boolean),
    reference: q.get('reference') ?? '',
    printer_id: q.get('printer_id') ?? '',
    station_id: q.get('station_id') ?? '',
    created_after: q.get('created_after') ?? '',
    created_before: q.get('created_before') ?? '',
  };
}

function paramsOf(f: Filters): Record<string, string> {
  return { ...f, status: f.status.join(',') };
}

/** The filters as the form shows them: times in the viewer's own time. */
function draftOf(f: Filters): Filters {
  return {
    ...f,
    created_after: rfc3339ToLocal(f.created_after),
    created_before: rfc3339ToLocal(f.created_before),
  };
}

/** The list's query when it was last shown, for the job page's way back to it. */
let listSearch = '';

function useNames(orgId: string) {
  const printers = useResource(
    () => get<PrinterPage>(`/v1/orgs/${enc(orgId)}/printers?limit=200`),
    [orgId],
  );
  const stations = useResource(
    () => get<{ items: Station[] }>(`/console/v1/orgs/${enc(orgId)}/stations`),
    [orgId],
  );
  // An id missing from a whole list is of a printer (or station) deleted since; from a list cut
  // short, or not read yet, it may be one further on, and only its short id is shown.
  return {
    printers: printers.data?.printers ?? [],
    stations: stations.data?.items ?? [],
    printer: (id: string) =>
      printers.data?.printers.find((p) => p.id === id)?.name ??
      (printers.data && !printers.data.next_cursor ? `deleted printer ${short(id)}` : short(id)),
    station: (id: string) =>
      stations.data?.items.find((s) => s.id === id)?.name ??
      (stations.data ? `deleted station ${short(id)}` : short(id)),
  };
}

/**
 * The job list. Its filters and page are in the URL's query (`cursor` for the page), so that
 * reload, Back and a shared link show the same list; the cursors of the pages before it ride in
 * the history entry, for Previous page. A link to a later page, opened afresh, offers First page.
 */
export function JobsPage(): JSX.Element {
  const { org } = useApp();
  const names = useNames(org.id);
  const pools = usePools(org.id);
  const search = useSearch();
  const filters = filtersOf(search);
  const key = JSON.stringify(filters);
  const { cursor, pager } = urlPager(search, paramsOf(filters));
  const [draft, setDraft] = useState<Filters>(() => draftOf(filters));
  // The form follows the URL when Back or a link changes it.
  useEffect(() => setDraft(draftOf(filtersOf(search))), [key]);
  useEffect(() => {
    listSearch = search.toString() ? `?${search.toString()}` : '';
  }, [search]);
  const r = useResource(
    () =>
      get<JobList>(
        `/v1/orgs/${enc(org.id)}/jobs${query({ limit: '25', cursor, ...paramsOf(filters) })}`,
      ),
    [org.id, cursor, key],
  );
  // A job that changes is re-read with its page; on the first page a new job appears at the top.
  useLive('job.', (ev) => {
    const job = jobOf(ev);
    if (cursor === '' || (job && r.data?.items.some((j) => j.id === job.id))) r.reloadSoon();
  });
  const apply = (f: Filters) => setSearch(paramsOf(f));
  const toggleStatus = (s: string) =>
    apply({
      ...filters,
      status: filters.status.includes(s)
        ? filters.status.filter((x) => x !== s)
        : [...filters.status, s],
    });
  const counts = r.data?.counts ?? {};
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const items = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="Jobs" />
      <fieldset class="status-filter">
        <legend>Status</legend>
        <button
          type="button"
          class="chip"
          aria-pressed={filters.status.length === 0}
          onClick={() => apply({ ...filters, status: [] })}
        >
          All <span class="count">{total}</span>
        </button>
        {STATUSES.map((s) => (
          <button
            key={s}
            type="button"
            class="chip"
            aria-pressed={filters.status.includes(s)}
            onClick={() => toggleStatus(s)}
          >
            {s} <span class="count">{counts[s] ?? 0}</span>
          </button>
        ))}
      </fieldset>
      <details
        class="filters"
        open={Boolean(
          filters.reference ||
            filters.printer_id ||
            filters.station_id ||
            filters.created_after ||
            filters.created_before,
        )}
      >
        <summary>More filters</summary>
        <Form
          class="filter-form"
          onSubmit={() =>
            apply({
              ...draft,
              created_after: localToRfc3339(draft.created_after) ?? '',
              created_before: localToRfc3339(draft.created_before) ?? '',
            })
          }
        >
          <Field
            label="Reference"
            value={draft.reference}
            onValue={(v) => setDraft({ ...draft, reference: v })}
          />
          <label>
            Printer
            <select
              value={draft.printer_id}
              onChange={(e) => setDraft({ ...draft, printer_id: e.currentTarget.value })}
            >
              <Options items={names.printers} empty="Any" />
            </select>
          </label>
          <label>
            Station
            <select
              value={draft.station_id}
              onChange={(e) => setDraft({ ...draft, station_id: e.currentTarget.value })}
            >
              <Options items={names.stations} empty="Any" />
            </select>
          </label>
          <Field
            label="Created after"
            type="datetime-local"
            value={draft.created_after}
            onValue={(v) => setDraft({ ...draft, created_after: v })}
          />
          <Field
            label="Created before"
            type="datetime-local"
            value={draft.created_before}
            onValue={(v) => setDraft({ ...draft, created_before: v })}
          />
          <FormButtons
            submit="Apply filters"
            back="Clear filters"
            onBack={() => apply(NO_FILTERS)}
          />
        </Form>
      </details>
      <ErrorText error={r.error} />
      <Table
        label="Jobs"
        columns={['Job', 'Status', 'Printer', 'Reference', 'Created']}
        rows={items}
        empty={`No jobs${key === JSON.stringify(NO_FILTERS) ? ' yet' : ' match these filters'}.`}
        loaded={r.data !== undefined}
        row={(j) => (
          <tr key={j.id} data-job-id={j.id}>
            <th scope="row">
              <Link href={`/jobs/${j.id}`} class="job-link">
                <span>{j.title || 'Untitled job'}</span>
                <span class="job-id">{j.id}</span>
              </Link>
            </th>
            <td data-label="Status">
              <Status status={j.status} />
              {j.live ? null : <span class="tag">test</span>}
              {j.status_detail ? <div class="small muted">{j.status_detail}</div> : null}
            </td>
            <td data-label="Printer">
              <Placement job={j} printer={names.printer} pools={pools} />
            </td>
            <td class="wrap-anywhere" data-label="Reference">
              {j.reference || <span class="muted">—</span>}
            </td>
            <td data-label="Created">
              <Time at={j.created_at} />
            </td>
          </tr>
        )}
      />
      <Pager {...pager} next={r.data?.next_cursor} />
    </>
  );
}

const CANCELLABLE: readonly JobStatus[] = ['scheduled', 'held', 'queued', 'sent'];
const RETRYABLE: readonly JobStatus[] = ['failed', 'held'];

function Preview(props: { orgId: string; job: Job }): JSX.Element {
  const url = `/v1/orgs/${enc(props.orgId)}/jobs/${enc(props.job.id)}/preview`;
  const isPdf = props.job.content_type === 'application/pdf';
  const isText = props.job.content_type.startsWith('text/');
  const [text, setText] = useState<string | null>(null);
  const [why, setWhy] = useState('');
  useEffect(() => {
    setText(null);
    setWhy('');
    if (props.job.content_deleted || !isText) return;
    let stale = false;
    fetchBlob(url)
      .then(async (blob) => {
        if (!stale) setText(await blob.text());
      })
      .catch((err) => {
        if (!stale) setWhy(messageOf(err));
      });
    return () => {
      stale = true;
    };
  }, [url, isText, props.job.content_deleted]);
  if (props.job.content_deleted)
    return <p class="muted">The document is past retention and was deleted.</p>;
  if (why) return <p class="muted">{why}</p>;
  // The gateway renders a PDF's first page as a PNG; the image is loaded with the session cookie.
  if (isPdf) return <img class="preview" src={url} alt="The first page of the document" />;
  if (isText)
    return text === null ? <p class="muted">Loading…</p> : <pre class="preview">{text}</pre>;
  return <p class="muted">A {props.job.content_type} document has no preview.</p>;
}

export function JobPage(props: { id: string }): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const names = useNames(org.id);
  const pools = usePools(org.id);
  const [moving, setMoving] = useState(false);
  const r = useResource(
    () => get<JobWithEvents>(`/v1/orgs/${enc(org.id)}/jobs/${enc(props.id)}`),
    [org.id, props.id],
  );
  useLive('job.', (ev) => {
    if (jobOf(ev)?.id === props.id) r.reloadSoon();
  });
  const act = useAction(async (what: 'cancel' | 'retry' | 'reprint') => {
    const res = await post<{ job: Job }>(`/v1/orgs/${enc(org.id)}/jobs/${enc(props.id)}/${what}`);
    if (what === 'reprint') navigate(`/jobs/${res.job.id}`);
    else await r.reload();
  });
  const people = useResource(
    () => get<{ items: Member[] }>(`/console/v1/orgs/${enc(org.id)}/people`),
    [org.id],
  );
  const actorName = (actor: string) => {
    const [kind, id = ''] = actor.split(':');
    if (kind === 'station') return `by station ${names.station(id)}`;
    if (kind === 'api_key') return `by API key ${short(id)}`;
    if (kind === 'person') {
      const who = people.data?.items.find((m) => m.person_id === id);
      return `by ${who ? who.display_name : `person ${short(id)}`}`;
    }
    if (actor === 'admin') return 'by the operator';
    if (actor === 'system') return 'by Spool';
    return `by ${actor}`;
  };
  const confirm = useConfirm();
  const askCancel = async (j: Job) => {
    const ok = await confirm.ask({
      title: `Cancel the job ${j.title || short(j.id)}?`,
      body: 'Spool withdraws it from its station and it is not printed; a printer that has already begun it may still finish. A cancelled job cannot be retried, only reprinted as a new job.',
      confirm: 'Cancel job',
      // "Cancel" beside "Cancel job" would read as the action itself.
      dismiss: 'Keep job',
    });
    if (ok) await act.run('cancel');
  };
  const job = r.data?.job;
  return (
    <>
      <p class="crumbs">
        <Link href={`/jobs${listSearch}`}>← Back to the list</Link>
      </p>
      <PageHeader title={job ? job.title || `Job ${short(job.id)}` : 'Job'}>
        {job && canWrite ? (
          <>
            <button
              type="button"
              class="secondary"
              disabled={act.busy || !CANCELLABLE.includes(job.status)}
              onClick={() => void askCancel(job)}
            >
              Cancel job
            </button>
            <button
              type="button"
              class="secondary"
              disabled={act.busy || !RETRYABLE.includes(job.status)}
              onClick={() => void act.run('retry')}
            >
              Retry job
            </button>
            <button
              type="button"
              disabled={act.busy || job.content_deleted}
              onClick={() => void act.run('reprint')}
            >
              Reprint job
            </button>
            {moving ? null : (
              <button
                type="button"
                class="secondary"
                disabled={act.busy || !MOVABLE.includes(job.status)}
                title="Send it to another printer: a job a station has not taken yet"
                onClick={() => setMoving(true)}
              >
                Move
              </button>
            )}
          </>
        ) : null}
      </PageHeader>
      {confirm.dialog}
      <ErrorText error={r.error || act.error} />
      {job && canWrite && moving && MOVABLE.includes(job.status) ? (
        <MoveForm
          orgId={org.id}
          job={job}
          printers={names.printers}
          pool={job.pool_id ? pools.pool(job.pool_id) : undefined}
          onClose={() => setMoving(false)}
          onMoved={async () => {
            setMoving(false);
            await r.reload();
          }}
        />
      ) : null}
      {job ? (
        <div class="job-layout">
          <section class="panel" aria-labelledby="job-details">
            <h2 id="job-details">Details</h2>
            <dl class="details">
              <dt>Status</dt>
              <dd>
                <Status status={job.status} />
                {job.status_detail ? <span class="muted"> {job.status_detail}</span> : null}
              </dd>
              {job.confirmation ? (
                <>
                  <dt>Confirmed</dt>
                  <dd>
                    {job.confirmation.level === 'device_completed'
                      ? 'by the printer'
                      : 'handed to the printer'}
                    {job.confirmation.pages !== null
                      ? `, ${job.confirmation.pages} ${job.confirmation.pages === 1 ? 'page' : 'pages'}`
                      : ''}
                  </dd>
                </>
              ) : null}
              <dt>Id</dt>
              <dd>
                <code>{job.id}</code>
              </dd>
              <dt>Reference</dt>
              <dd>{job.reference || '—'}</dd>
              <RoutingDetails
                job={job}
                events={r.data?.events ?? []}
                pools={pools}
                printer={names.printer}
                station={names.station}
                actorName={actorName}
              />
              <dt>Mode</dt>
              <dd>{job.live ? 'live' : 'test'}</dd>
              <dt>Document</dt>
              <dd>
                {job.content_type}, {job.size.toLocaleString()} bytes
              </dd>
              <dt>Attempt</dt>
              <dd>{job.attempt}</dd>
              <dt>Options</dt>
              <dd>
                <code>{JSON.stringify(job.options)}</code>
              </dd>
              {job.reprint_of ? (
                <>
                  <dt>Reprint of</dt>
                  <dd>
                    <Link href={`/jobs/${job.reprint_of}`}>{short(job.reprint_of)}</Link>
                  </dd>
                </>
              ) : null}
              <dt>Created</dt>
              <dd>
                <Time at={job.created_at} />
              </dd>
            </dl>
          </section>
          <section class="panel" aria-labelledby="job-events">
            <h2 id="job-events">Timeline</h2>
            <ol class="timeline">
              {(r.data?.events ?? []).map((e, i) => (
                <li key={`${e.at}-${i}`}>
                  <Status status={e.status} /> <Time at={e.at} />
                  <div class="small muted">
                    {e.detail && e.detail !== e.status
                      ? `${withPrinterNames(e.detail, names.printers)} · `
                      : ''}
                    {actorName(e.actor)}
                  </div>
                </li>
              ))}
            </ol>
          </section>
          <section class="panel preview-panel" aria-labelledby="job-preview">
            <h2 id="job-preview">Preview</h2>
            <Preview orgId={org.id} job={job} />
          </section>
        </div>
      ) : null}
    </>
  );
}
