/**
 * A platform's child organizations (DESIGN §5, "Platforms"): the list with each child's usage over
 * the last 30 days, and for developers and above (whose sessions carry `orgs:write`) create and
 * delete. The menu's `Organizations` link is shown by {@link useOrganizationsLink}.
 */
import type { JSX } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import {
  MAX_CHILD_NAME_LENGTH,
  MAX_CHILD_REFERENCE_LENGTH,
} from '../../../lib/contracts/child-orgs.js';
import { hasRole } from '../../../lib/roles.js';
import { api, enc, get, post, query } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { Field, Form, FormButtons, Panel } from '../forms.js';
import { useAction, useResource } from '../resource.js';
import { urlPager, useSearch } from '../router.js';
import { ActionsCell, DangerButton, Pager, Table } from '../table.js';
import type { ChildOrg, ChildOrgPage, CreateChildOrgRequest, OrgMembership } from '../types.js';
import { ErrorText, PageHeader, Time } from '../ui.js';
import { formatBytes, formatCount, totalsByOrg, USAGE_DAYS, useUsage } from '../usage.js';

/**
 * Whether the menu shows `Organizations`: when the organization has child organizations, and to
 * developers and above in any organization, since any organization becomes a parent by creating
 * its first child (a child's own attempt is refused: one level only). The session does not say
 * whether an organization is a parent, so the list of its children is asked for one item, and
 * only where the role alone does not decide.
 */
export function useOrganizationsLink(org: OrgMembership): boolean {
  const canCreate = hasRole(org.role, 'developer');
  const r = useResource(
    () =>
      canCreate
        ? Promise.resolve(null)
        : get<ChildOrgPage>(`/v1/orgs/${enc(org.id)}/children?limit=1`),
    [org.id, canCreate],
  );
  return canCreate || (r.data?.items.length ?? 0) > 0;
}

/** Deleting a large child takes more than one request: each answers 202 until the last's 204. */
const MAX_DELETE_REQUESTS = 50;

async function deleteChild(orgId: string, id: string): Promise<void> {
  const path = `/v1/orgs/${enc(orgId)}/children/${enc(id)}`;
  for (let i = 0; i < MAX_DELETE_REQUESTS; i++) {
    const answer = await api<{ deleting?: boolean } | undefined>('DELETE', path);
    if (!answer?.deleting) return;
  }
  throw new Error(
    'The organization is partly deleted and its keys are revoked; delete it again to go on.',
  );
}

function ChildForm(props: { orgId: string; onCreated(): Promise<void>; onClose(): void }) {
  const [name, setName] = useState('');
  const [reference, setReference] = useState('');
  const box = useRef<HTMLDivElement>(null);
  // The person opened the form to fill it in: its first field has the focus, given as the form
  // appears (a layout effect), so that nothing typed meanwhile lands in a field it then leaves.
  useLayoutEffect(() => box.current?.querySelector('input')?.focus(), []);
  const create = useAction(async () => {
    const body: CreateChildOrgRequest = { name: name.trim() };
    if (reference.trim()) body.reference = reference.trim();
    await post(`/v1/orgs/${enc(props.orgId)}/children`, body);
    await props.onCreated();
  });
  return (
    <Panel id="child-form" title="New organization">
      <div ref={box}>
        <Form class="stack-form" onSubmit={create.run}>
          <div class="row">
            <Field
              label="Name"
              required
              maxLength={MAX_CHILD_NAME_LENGTH}
              value={name}
              placeholder="e.g. Corner Bakery"
              onValue={setName}
            />
            <Field
              label="Reference"
              maxLength={MAX_CHILD_REFERENCE_LENGTH}
              value={reference}
              placeholder="e.g. your customer number"
              aria-describedby="child-reference-hint"
              onValue={setReference}
              hint={
                <span class="small muted" id="child-reference-hint">
                  Optional: your own reference for it, which the API's list can find it by.
                </span>
              }
            />
          </div>
          <ErrorText error={create.error} />
          <FormButtons
            submit="Create organization"
            disabled={create.busy}
            back="Cancel"
            onBack={props.onClose}
          />
        </Form>
      </div>
    </Panel>
  );
}

export function OrganizationsPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const { cursor, pager } = urlPager(useSearch(), {});
  const r = useResource(
    () => get<ChildOrgPage>(`/v1/orgs/${enc(org.id)}/children${query({ limit: '100', cursor })}`),
    [org.id, cursor],
  );
  const usage = useUsage(org.id, true);
  const totals = totalsByOrg(usage.data?.items ?? []);
  const [formOpen, setFormOpen] = useState(false);
  const remove = useAction(async (id: string) => {
    try {
      await deleteChild(org.id, id);
    } finally {
      await Promise.all([r.reload(), usage.reload()]);
    }
  });
  const confirm = useConfirm();
  const askRemove = async (c: ChildOrg) => {
    const ok = await confirm.ask({
      title: `Delete the organization ${c.name}?`,
      body: (
        <>
          <p>
            Everything it has is deleted with it: its keys, stations, printers, jobs and their
            documents, webhook endpoints, and its people's access to it.
          </p>
          <p>This cannot be undone.</p>
        </>
      ),
      confirm: 'Delete organization',
    });
    if (ok) await remove.run(c.id);
  };
  const children = r.data?.items ?? [];
  const usageOf = (id: string) => totals.get(id);
  const figure = (id: string, pick: (t: NonNullable<ReturnType<typeof usageOf>>) => string) => {
    const t = usageOf(id);
    return t ? pick(t) : <span class="muted">—</span>;
  };
  return (
    <>
      <PageHeader title="Organizations">
        {canWrite && !formOpen ? (
          <button
            type="button"
            onClick={() => {
              remove.clear();
              setFormOpen(true);
            }}
          >
            Create organization
          </button>
        ) : null}
      </PageHeader>
      {confirm.dialog}
      <p class="lead">
        Child organizations of {org.name}: each has its own printers, stations, keys and jobs, and
        this organization's API keys act on them too (<code>/v1/orgs/&#123;child&#125;/…</code>).
        Usage is each one's last {USAGE_DAYS} days (UTC), counted about once a minute: jobs, the
        pages of the PDFs printed, the data of the documents sent, and the events delivered to its
        webhook endpoints.
      </p>
      {formOpen && canWrite ? (
        <ChildForm
          orgId={org.id}
          onClose={() => setFormOpen(false)}
          onCreated={async () => {
            setFormOpen(false);
            await Promise.all([r.reload(), usage.reload()]);
          }}
        />
      ) : null}
      <ErrorText error={r.error || usage.error} />
      <ErrorText error={remove.error} />
      <Table
        label="Organizations"
        columns={[
          'Name',
          'Reference',
          'Created',
          'Jobs created',
          'Printed',
          'Failed',
          'Pages',
          'Data',
          'Deliveries',
        ]}
        actions={canWrite}
        rows={children}
        empty={
          canWrite
            ? 'No child organizations yet: create one for each customer your platform serves.'
            : 'No child organizations.'
        }
        loaded={r.data !== undefined}
        row={(c) => (
          <tr key={c.id} data-org-id={c.id}>
            <th scope="row" id={`child-${c.id}`}>
              {c.name}
            </th>
            <td data-label="Reference">{c.reference || <span class="muted">—</span>}</td>
            <td data-label="Created">
              <Time at={c.created_at} />
            </td>
            <td data-label="Jobs created">{figure(c.id, (t) => formatCount(t.jobs_created))}</td>
            <td data-label="Printed">{figure(c.id, (t) => formatCount(t.jobs_printed))}</td>
            <td data-label="Failed">{figure(c.id, (t) => formatCount(t.jobs_failed))}</td>
            <td data-label="Pages">{figure(c.id, (t) => formatCount(t.pages))}</td>
            <td data-label="Data">{figure(c.id, (t) => formatBytes(t.bytes))}</td>
            <td data-label="Deliveries">
              {figure(c.id, (t) => formatCount(t.webhook_deliveries))}
            </td>
            {canWrite ? (
              <ActionsCell>
                <DangerButton
                  busy={remove.busy}
                  describedBy={`child-${c.id}`}
                  onClick={() => void askRemove(c)}
                >
                  Delete organization
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
