/** People of the organization (invite, change role, remove) and its settings. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { del, enc, get, patch, post } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { Field, Form, named, Options, Panel } from '../forms.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { ActionsCell, DangerButton, Table } from '../table.js';
import { type Invitation, type Member, ROLES, type Role } from '../types.js';
import { ErrorText, PageHeader, Time } from '../ui.js';

/** "a viewer", "an admin". */
function withArticle(role: Role): string {
  return `${role === 'admin' || role === 'owner' ? 'an' : 'a'} ${role}`;
}

export function PeoplePage(): JSX.Element {
  const { org, session } = useApp();
  const isAdmin = useCan('admin');
  const isOwner = useCan('owner');
  const base = `/console/v1/orgs/${enc(org.id)}`;
  const r = useResource(
    () => get<{ items: Member[]; invitations: Invitation[] }>(`${base}/people`),
    [base],
  );
  // People and invitations changed elsewhere (another admin, an invitation accepted) show up
  // without a reload.
  useLive((ev) => ev.type.startsWith('member.') || ev.type.startsWith('invitation.'), r.reloadSoon);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const [link, setLink] = useState<{ email: string; url: string } | null>(null);
  const invite = useAction(async () => {
    // The last invitation's link goes: under this one's error it would read as this one's.
    setLink(null);
    const res = await post<{ invitation: Invitation; url: string }>(`${base}/invitations`, {
      email,
      role,
    });
    setLink({ email: res.invitation.email, url: res.url });
    setEmail('');
    await r.reload();
  });
  const change = useAction(async (personId: string, newRole: Role) => {
    await patch(`${base}/people/${enc(personId)}`, { role: newRole });
    await r.reload();
  });
  const remove = useAction(async (personId: string) => {
    await del(`${base}/people/${enc(personId)}`);
    await r.reload();
  });
  const withdraw = useAction(async (invitationId: string) => {
    await del(`${base}/invitations/${enc(invitationId)}`);
    await r.reload();
  });
  const confirm = useConfirm();
  const askWithdraw = async (i: Invitation) => {
    const ok = await confirm.ask({
      title: `Withdraw the invitation of ${i.email}?`,
      body: `The link sent to ${i.email} stops working at once. Invite them again to send a new one.`,
      confirm: 'Withdraw invitation',
    });
    if (ok) await withdraw.run(i.id);
  };
  const askChange = async (m: Member, newRole: Role): Promise<boolean> => {
    const ok = await confirm.ask({
      title: `Make ${m.display_name} ${withArticle(newRole)}?`,
      body: `${m.display_name} (${m.email}) is ${withArticle(m.role)} of ${org.name} now; as ${withArticle(newRole)}, they can do what that role allows from their next request.`,
      confirm: 'Change role',
    });
    if (ok) await change.run(m.person_id, newRole);
    return ok;
  };
  const askRemove = async (m: Member) => {
    const ok = await confirm.ask({
      title: `Remove ${m.display_name} from ${org.name}?`,
      body: `${m.display_name} (${m.email}) loses access to ${org.name} at once, in every signed-in session. Their Spool account stays; a new invitation brings them back.`,
      confirm: 'Remove member',
    });
    if (ok) await remove.run(m.person_id);
  };
  // Admins manage people other than owners; owners manage everyone.
  const assignable = named(ROLES.filter((x) => isOwner || x !== 'owner'));
  const canManage = (m: Member) => isAdmin && (isOwner || m.role !== 'owner');
  return (
    <>
      <PageHeader title="People" />
      {confirm.dialog}
      {isAdmin ? (
        <Panel id="invite" title="Invite someone">
          <Form class="inline-form" onSubmit={invite.run}>
            <Field label="Email" type="email" required value={email} onValue={setEmail} />
            <div class="field">
              <label for="invite-role">Role</label>
              <select
                id="invite-role"
                value={role}
                onChange={(e) => setRole(e.currentTarget.value as Role)}
              >
                <Options items={assignable} />
              </select>
            </div>
            <button type="submit" disabled={invite.busy}>
              Invite
            </button>
          </Form>
          <ErrorText error={invite.error} />
          {link ? (
            <div class="secret-box">
              <p>
                Send this one-time link to <strong>{link.email}</strong>; it opens a page where they
                choose a display name and a password, or give the password of the Spool account they
                have.
              </p>
              <output class="secret" aria-label="Invitation link">
                {link.url}
              </output>
            </div>
          ) : null}
        </Panel>
      ) : null}
      <ErrorText error={r.error || change.error || remove.error || withdraw.error} />
      <Table
        label="Members"
        columns={['Name', 'Email', 'Role', 'Joined']}
        actions={isAdmin}
        rows={r.data?.items ?? []}
        row={(m) => (
          <tr key={m.person_id}>
            <th scope="row">
              {m.display_name}
              {m.person_id === session.person.id ? <span class="tag">you</span> : null}
            </th>
            <td data-label="Email">{m.email}</td>
            <td data-label="Role">
              {canManage(m) ? (
                <select
                  aria-label={`Access of ${m.display_name}`}
                  value={m.role}
                  disabled={change.busy}
                  onChange={(e) => {
                    const select = e.currentTarget;
                    void askChange(m, select.value as Role).then((ok) => {
                      // Left as it was: the select shows the role the member still has.
                      if (!ok) select.value = m.role;
                    });
                  }}
                >
                  <Options items={assignable} />
                </select>
              ) : (
                m.role
              )}
            </td>
            <td data-label="Joined">
              <Time at={m.joined_at} />
            </td>
            {isAdmin ? (
              <ActionsCell>
                {canManage(m) ? (
                  <DangerButton
                    label={`Remove ${m.display_name}`}
                    busy={remove.busy}
                    onClick={() => void askRemove(m)}
                  >
                    Remove
                  </DangerButton>
                ) : null}
              </ActionsCell>
            ) : null}
          </tr>
        )}
      />
      {(r.data?.invitations ?? []).length > 0 ? (
        <section aria-labelledby="pending">
          <h2 id="pending">Pending invitations</h2>
          <Table
            label="Pending invitations"
            columns={['Email', 'Role', 'Expires']}
            actions={isAdmin}
            rows={r.data?.invitations ?? []}
            row={(i) => (
              <tr key={i.id}>
                <th scope="row">{i.email}</th>
                <td data-label="Role">{i.role}</td>
                <td data-label="Expires">
                  <Time at={i.expires_at} />
                </td>
                {isAdmin ? (
                  <ActionsCell>
                    {isOwner || i.role !== 'owner' ? (
                      <DangerButton
                        label={`Withdraw the invitation of ${i.email}`}
                        busy={withdraw.busy}
                        onClick={() => void askWithdraw(i)}
                      >
                        Withdraw
                      </DangerButton>
                    ) : null}
                  </ActionsCell>
                ) : null}
              </tr>
            )}
          />
        </section>
      ) : null}
    </>
  );
}

type Settings = Record<string, unknown>;

const LABELS: Record<string, string> = {
  name: 'Organization name',
  job_document_retention_days: 'Keep job documents (days after the job finishes)',
  upload_retention_days: 'Keep uploads (days)',
};

export function SettingsPage(): JSX.Element {
  const { org, renamedOrg } = useApp();
  const isOwner = useCan('owner');
  const url = `/console/v1/orgs/${enc(org.id)}/settings`;
  const r = useResource(async () => {
    const res = await get<{ settings?: Settings } & Settings>(url);
    return (res.settings ?? res) as Settings;
  }, [url]);
  const [draft, setDraft] = useState<Settings>({});
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    const res = await patch<{ settings?: Settings }>(url, draft);
    setDraft({});
    setSaved(true);
    if (typeof res.settings?.name === 'string') renamedOrg(res.settings.name);
    await r.reload();
  });
  const settings = r.data ?? {};
  const keys = Object.keys(settings).filter(
    (k) => k !== 'id' && (typeof settings[k] === 'string' || typeof settings[k] === 'number'),
  );
  // Retention is the installation's, set by its operator; an owner renames the organization.
  const editable = (k: string) => isOwner && k === 'name';
  return (
    <>
      <PageHeader title="Settings" />
      {isOwner ? null : <p class="lead">Only owners change the organization's settings.</p>}
      <ErrorText error={r.error} />
      {r.data ? (
        <Form class="panel stack-form settings" onSubmit={save.run}>
          {keys.map((k) => {
            const value = k in draft ? draft[k] : settings[k];
            const numeric = typeof settings[k] === 'number';
            return (
              <div class="field" key={k}>
                <label for={`setting-${k}`}>{LABELS[k] ?? k.replace(/_/g, ' ')}</label>
                {numeric ? (
                  <input
                    id={`setting-${k}`}
                    type="number"
                    min={0}
                    readOnly={!editable(k)}
                    value={String(value ?? '')}
                    onInput={(e) => setDraft({ ...draft, [k]: Number(e.currentTarget.value) })}
                  />
                ) : (
                  <input
                    id={`setting-${k}`}
                    type="text"
                    readOnly={!editable(k)}
                    value={String(value ?? '')}
                    onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })}
                  />
                )}
              </div>
            );
          })}
          <p class="small muted">
            Retention applies to the whole installation; its operator sets it with{' '}
            <code>spool admin settings set</code>.
          </p>
          <ErrorText error={save.error} />
          {saved ? (
            <p class="notice" role="status">
              Saved.
            </p>
          ) : null}
          {isOwner ? (
            <div>
              <button type="submit" disabled={save.busy || Object.keys(draft).length === 0}>
                Save settings
              </button>
            </div>
          ) : null}
        </Form>
      ) : null}
    </>
  );
}
