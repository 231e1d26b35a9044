/** API keys: create (secret shown once), list, revoke. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { SCOPES, type Scope } from '../../../lib/contracts/scopes.js';
import { del, enc, get, post } from '../api.js';
import { useApp, useCan } from '../app.js';
import { useConfirm } from '../confirm.js';
import { localToRfc3339 } from '../dates.js';
import { CheckList, Field, Form, Panel, Radios } from '../forms.js';
import { useLive } from '../live.js';
import { useAction, useResource } from '../resource.js';
import { ActionsCell, DangerButton, Table } from '../table.js';
import type { ApiKey } from '../types.js';
import { ErrorText, PageHeader, SecretBox, Status, Time } from '../ui.js';

const MODES = [
  { value: 'test', label: 'Test' },
  { value: 'live', label: 'Live' },
] as const;

export function KeysPage(): JSX.Element {
  const { org } = useApp();
  const canWrite = useCan('developer');
  const r = useResource(
    () => get<{ items: ApiKey[] }>(`/console/v1/orgs/${enc(org.id)}/keys`),
    [org.id],
  );
  // Keys made or revoked elsewhere (another tab, another admin) show up without a reload.
  useLive('api_key.', r.reloadSoon);
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'live' | 'test'>('test');
  const [scopes, setScopes] = useState<string[]>(['jobs:write', 'jobs:read'] satisfies Scope[]);
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
        <Panel id="new-key" title="New key">
          <Form class="stack-form" onSubmit={create.run}>
            <div class="row">
              <Field
                label="Name"
                maxLength={200}
                value={name}
                placeholder="e.g. shop backend"
                onValue={setName}
              />
              <Radios legend="Mode" name="mode" choices={MODES} value={mode} onChange={setMode} />
            </div>
            <CheckList legend="Scopes" choices={SCOPES} value={scopes} onChange={setScopes} />
            <div class="row">
              <Field
                label="Expires"
                type="datetime-local"
                value={expires}
                onValue={setExpires}
                hint={<span class="small muted">Empty: never.</span>}
              />
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
          </Form>
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
        </Panel>
      ) : null}
      <ErrorText error={r.error || revoke.error} />
      <Table
        label="API keys"
        columns={['Name', 'Key', 'Scopes', 'Allowed IPs', 'Expires', 'Last used', 'Created']}
        actions={canWrite}
        rows={items}
        empty="No keys yet."
        loaded={r.data !== undefined}
        row={(k) => (
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
              {k.allowed_ips.length ? k.allowed_ips.join(', ') : <span class="muted">any</span>}
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
              <ActionsCell>
                {k.revoked_at ? (
                  <Status status="revoked" />
                ) : (
                  <DangerButton
                    busy={revoke.busy}
                    describedBy={`key-${k.id}`}
                    onClick={() => void askRevoke(k)}
                  >
                    Revoke
                  </DangerButton>
                )}
              </ActionsCell>
            ) : null}
          </tr>
        )}
      />
    </>
  );
}
