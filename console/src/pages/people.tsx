/** People of the organization (invite, change role, remove) and its settings. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import {
  del,
  enc,
  get,
  type Invitation,
  type Member,
  patch,
  post,
  ROLES,
  type Role,
} from '../api.js';
import {
  ErrorText,
  PageHeader,
  Time,
  useAction,
  useApp,
  useCan,
  useConfirm,
  useResource,
} from '../ui.js';

export function PeoplePage(): JSX.Element {
  const { org, session } = useApp();
  const isAdmin = useCan('admin');
  const isOwner = useCan('owner');
  const base = `/console/v1/orgs/${enc(org.id)}`;
  const r = useResource(
    () => get<{ items: Member[]; invitations: Invitation[] }>(`${base}/people`),
    [base],
  );
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
      title: `Make ${m.display_name} ${newRole === 'admin' || newRole === 'owner' ? 'an' : 'a'} ${newRole}?`,
      body: `${m.display_name} (${m.email}) is ${m.role === 'admin' || m.role === 'owner' ? 'an' : 'a'} ${m.role} of ${org.name} now; as ${newRole === 'admin' || newRole === 'owner' ? 'an' : 'a'} ${newRole}, they can do what that role allows from their next request.`,
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
  const assignable = ROLES.filter((x) => isOwner || x !== 'owner');
  const canManage = (m: Member) => isAdmin && (isOwner || m.role !== 'owner');
  return (
    <>
      <PageHeader title="People" />
      {confirm.dialog}
      {isAdmin ? (
        <section class="panel" aria-labelledby="invite">
          <h2 id="invite">Invite someone</h2>
          <form
            class="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              void invite.run();
            }}
          >
            <label>
              Email
              <input
                type="email"
                required
                value={email}
                onInput={(e) => setEmail(e.currentTarget.value)}
              />
            </label>
            <div class="field">
              <label for="invite-role">Role</label>
              <select
                id="invite-role"
                value={role}
                onChange={(e) => setRole(e.currentTarget.value as Role)}
              >
                {assignable.map((x) => (
                  <option key={x} value={x}>
                    {x}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" disabled={invite.busy}>
              Invite
            </button>
          </form>
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
        </section>
      ) : null}
      <ErrorText error={r.error || change.error || remove.error || withdraw.error} />
      <div class="table-wrap">
        <table class="stack" aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              {isAdmin ? (
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              ) : null}
            </tr>
          </thead>
          <tbody>
            {(r.data?.items ?? []).map((m) => (
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
                      {assignable.map((x) => (
                        <option key={x} value={x}>
                          {x}
                        </option>
                      ))}
                    </select>
                  ) : (
                    m.role
                  )}
                </td>
                <td data-label="Joined">
                  <Time at={m.joined_at} />
                </td>
                {isAdmin ? (
                  <td class="actions">
                    {canManage(m) ? (
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove ${m.display_name}`}
                        disabled={remove.busy}
                        onClick={() => void askRemove(m)}
                      >
                        Remove
                      </button>
                    ) : null}
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {(r.data?.invitations ?? []).length > 0 ? (
        <section aria-labelledby="pending">
          <h2 id="pending">Pending invitations</h2>
          <div class="table-wrap">
            <table class="stack" aria-label="Pending invitations">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Expires</th>
                  {isAdmin ? (
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {(r.data?.invitations ?? []).map((i) => (
                  <tr key={i.id}>
                    <th scope="row">{i.email}</th>
                    <td data-label="Role">{i.role}</td>
                    <td data-label="Expires">
                      <Time at={i.expires_at} />
                    </td>
                    {isAdmin ? (
                      <td class="actions">
                        {isOwner || i.role !== 'owner' ? (
                          <button
                            type="button"
                            class="danger"
                            aria-label={`Withdraw the invitation of ${i.email}`}
                            disabled={withdraw.busy}
                            onClick={() => void askWithdraw(i)}
                          >
                            Withdraw
                          </button>
                        ) : null}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
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
        <form
          class="panel stack-form settings"
          onSubmit={(e) => {
            e.preventDefault();
            void save.run();
          }}
        >
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
        </form>
      ) : null}
    </>
  );
}
