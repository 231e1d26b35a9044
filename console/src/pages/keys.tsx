/** API keys: create (secret shown once), list, revoke. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { type ApiKey, del, enc, get, post } from '../api.js';
import {
  Empty,
  ErrorText,
  localToRfc3339,
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

const SCOPES = [
  'jobs:write',
  'jobs:read',
  'printers:read',
  'locations:read',
  'webhooks:read',
  'webhooks:write',
];

export function KeysPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const r = useResource(
    () => get<{ items: ApiKey[] }>(`/console/v1/orgs/${enc(org.id)}/keys`),
    [org.id],
  );
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'live' | 'test'>('test');
  const [scopes, setScopes] = useState<string[]>(['jobs:write', 'jobs:read']);
  const [expires, setExpires] = useState('');
  const [ips, setIps] = useState('');
  const [created, setCreated] = useState<{ key: ApiKey; secret: string } | null>(null);
  const create = useAction(async () => {
    const body: Record<string, unknown> = { mode, scopes };
    if (name.trim()) body.name = name.trim();
    const expiresAt = localToRfc3339(expires);
    if (expiresAt) body.expires_at = expiresAt;
    const allowed = ips
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    if (allowed.length > 0) body.allowed_ips = allowed;
    const res = await post<{ key: ApiKey; secret: string }>(
      `/console/v1/orgs/${enc(org.id)}/keys`,
      body,
    );
    setCreated(res);
    setName('');
    setExpires('');
    setIps('');
    await r.reload();
  });
  const revoke = useAction(async (id: string) => {
    await del(`/console/v1/orgs/${enc(org.id)}/keys/${enc(id)}`);
    await r.reload();
  });
  const confirm = useConfirm();
  const askRevoke = async (k: ApiKey) => {
    const ok = await confirm.ask({
      title: `Revoke the key ${k.name || k.hint}?`,
      body: 'Spool refuses every request made with it from now on. A revoked key cannot be used again.',
      confirm: 'Revoke key',
    });
    if (ok) await revoke.run(k.id);
  };
  const items = r.data?.items ?? [];
  return (
    <>
      <PageHeader title="API keys" />
      {confirm.dialog}
      <p class="lead">
        Keys let your systems call the print-job API. Spool keeps only a hash: a key's secret is
        shown once, when it is created.
      </p>
      {canWrite ? (
        <section class="panel" aria-labelledby="new-key">
          <h2 id="new-key">New key</h2>
          <form
            class="stack-form"
            onSubmit={(e) => {
              e.preventDefault();
              void create.run();
            }}
          >
            <div class="row">
              <label>
                Name
                <input
                  maxLength={200}
                  value={name}
                  placeholder="e.g. shop backend"
                  onInput={(e) => setName(e.currentTarget.value)}
                />
              </label>
              <fieldset>
                <legend>Mode</legend>
                <label class="check">
                  <input
                    type="radio"
                    name="mode"
                    value="test"
                    checked={mode === 'test'}
                    onChange={() => setMode('test')}
                  />
                  Test
                </label>
                <label class="check">
                  <input
                    type="radio"
                    name="mode"
                    value="live"
                    checked={mode === 'live'}
                    onChange={() => setMode('live')}
                  />
                  Live
                </label>
              </fieldset>
            </div>
            <fieldset>
              <legend>Scopes</legend>
              <div class="checks">
                {SCOPES.map((s) => (
                  <label class="check" key={s}>
                    <input
                      type="checkbox"
                      checked={scopes.includes(s)}
                      onChange={(e) =>
                        setScopes(
                          e.currentTarget.checked ? [...scopes, s] : scopes.filter((x) => x !== s),
                        )
                      }
                    />
                    <code>{s}</code>
                  </label>
                ))}
              </div>
            </fieldset>
            <div class="row">
              <label>
                Expires
                <input
                  type="datetime-local"
                  value={expires}
                  onInput={(e) => setExpires(e.currentTarget.value)}
                />
                <span class="small muted">Empty: never.</span>
              </label>
              <label>
                Allowed IP ranges
                <textarea
                  rows={2}
                  value={ips}
                  placeholder="203.0.113.0/24, 2001:db8::/32"
                  onInput={(e) => setIps(e.currentTarget.value)}
                />
                <span class="small muted">Empty: any address.</span>
              </label>
            </div>
            <ErrorText error={create.error} />
            <div>
              <button type="submit" disabled={create.busy}>
                Create key
              </button>
            </div>
          </form>
          {created ? (
            <SecretBox
              secret={created.secret}
              note={
                <>
                  The secret of <strong>{created.key.name || created.key.hint}</strong>. Copy it
                  now: it is not shown again.
                </>
              }
            />
          ) : null}
        </section>
      ) : null}
      <ErrorText error={r.error || revoke.error} />
      {r.data && items.length === 0 ? <Empty>No keys yet.</Empty> : null}
      {items.length > 0 ? (
        <div class="table-wrap">
          <table class="stack" aria-label="API keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Scopes</th>
                <th scope="col">Allowed IPs</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Created</th>
                {canWrite ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {items.map((k) => (
                <tr key={k.id} class={k.revoked_at ? 'revoked' : undefined}>
                  <th scope="row">
                    {k.name || <span class="muted">unnamed</span>}{' '}
                    <span class="tag">{k.live ? 'live' : 'test'}</span>
                  </th>
                  <td data-label="Key">
                    <code class="nowrap" id={`key-${k.id}`}>
                      {k.hint}
                    </code>
                  </td>
                  <td class="small" data-label="Scopes">
                    {k.scopes.join(', ') || <span class="muted">none</span>}
                  </td>
                  <td class="small" data-label="Allowed IPs">
                    {k.allowed_ips.length ? (
                      k.allowed_ips.join(', ')
                    ) : (
                      <span class="muted">any</span>
                    )}
                  </td>
                  <td data-label="Expires">
                    <Time at={k.expires_at} empty="never" />
                  </td>
                  <td data-label="Last used">
                    <Time at={k.last_used_at} empty="never" />
                  </td>
                  <td data-label="Created">
                    <Time at={k.created_at} />
                  </td>
                  {canWrite ? (
                    <td class="actions">
                      {k.revoked_at ? (
                        <Status status="revoked" />
                      ) : (
                        <button
                          type="button"
                          class="danger"
                          disabled={revoke.busy}
                          aria-describedby={`key-${k.id}`}
                          onClick={() => void askRevoke(k)}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
