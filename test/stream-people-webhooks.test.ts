/**
 * The event stream's events of people, invitations and webhook endpoints (docs/realtime.md
 * "Resource events") against a running Spool: each arrives on its organization's stream in the
 * API's shape, never with an invitation token or a signing secret, and never on another
 * organization's stream; a key without `webhooks:read` cannot ask for the endpoints' events.
 */
import anyTest, { type TestFn } from 'ava';
import { Browser, member, PASSWORD, tokenOf } from './helpers/console.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { openStream, type SseMessage, type SseStream } from './helpers/sse.js';
import {
  call,
  createKey,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgId: string;
  otherId: string;
  /** An owner of `orgId`. */
  owner: Browser;
  /** An owner of `otherId`. */
  otherOwner: Browser;
  /** jobs:read, webhooks:read and webhooks:write in `orgId`. */
  hooks: string;
  /** The same in `otherId`. */
  otherHooks: string;
  gone: Receiver;
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const [sys, gone] = await Promise.all([
    startTestSystem(),
    // An endpoint that answers 410 Gone, which disables it.
    startReceiver(() => ({ status: 410 })),
  ]);
  t.context = { sys, gone } as Ctx;
  const [orgId, otherId] = await Promise.all([createOrg(sys.url), createOrg(sys.url)]);
  const scopes = ['jobs:read', 'webhooks:read', 'webhooks:write'];
  const [owner, otherOwner, hooks, otherHooks] = await Promise.all([
    member(sys.url, orgId, 'owner'),
    member(sys.url, otherId, 'owner'),
    createKey(sys.url, orgId, { scopes }),
    createKey(sys.url, otherId, { scopes }),
  ]);
  Object.assign(t.context, {
    orgId,
    otherId,
    owner,
    otherOwner,
    hooks: hooks.secret,
    otherHooks: otherHooks.secret,
  });
});

test.after.always(async (t) => {
  await t.context.gone?.close();
  await t.context.sys?.stop();
});

function streamUrl(t: { context: Ctx }, orgId: string, query = ''): string {
  return `${t.context.sys.url}/v1/orgs/${orgId}/stream${query}`;
}

/** A stream opened with a member's session cookie, as the console opens it. */
function sessionStream(
  t: { context: Ctx },
  orgId: string,
  who: Browser,
  query = '',
): Promise<SseStream> {
  return openStream(streamUrl(t, orgId, query), {
    headers: { cookie: `spool_session=${who.cookie}` },
  });
}

interface Body<T> {
  type: string;
  created_at: string;
  org_id: string;
  data: T;
}

function bodyOf<T>(m: SseMessage): Body<T> {
  return JSON.parse(m.data) as Body<T>;
}

/** Waits for the event of `type` whose data `match` picks, and answers its body. */
async function eventOf<T>(
  stream: SseStream,
  type: string,
  match: (data: T) => boolean,
): Promise<Body<T>> {
  const found = (ms: SseMessage[]) => ms.find((m) => m.event === type && match(bodyOf<T>(m).data));
  const ms = await stream.until((all) => found(all) !== undefined);
  return bodyOf<T>(found(ms) as SseMessage);
}

type InvitationView = { id: string; email: string; role: string; expires_at: string };
type InvitationData = { invitation: InvitationView; reason?: string };
type MemberView = {
  person_id: string;
  email: string;
  display_name: string;
  role: string;
  joined_at: string;
};
type MemberData = { member: MemberView };
type EndpointView = Record<string, unknown> & { id: string; enabled: boolean };
type EndpointData = { endpoint: EndpointView };

const PEOPLE_TYPES =
  '?types=member.created,member.updated,member.deleted,invitation.created,invitation.deleted';

test('invitations sent, replaced, withdrawn and accepted and members added, changed and removed arrive on their organization stream only', async (t) => {
  const { sys, orgId, otherId, owner, otherOwner } = t.context;
  const stream = await sessionStream(t, orgId, owner, PEOPLE_TYPES);
  const other = await sessionStream(t, otherId, otherOwner, PEOPLE_TYPES);
  t.teardown(() => {
    stream.close();
    other.close();
  });
  t.is(stream.status, 200);
  t.is(other.status, 200);
  const people = `/console/v1/orgs/${orgId}`;
  const tokens: string[] = [];

  // Sent, then replaced by a second invitation to the same email, which is then withdrawn.
  const first = await owner.call<{ invitation: InvitationView; url: string }>(
    'POST',
    `${people}/invitations`,
    { body: { email: 'grace@example.com', role: 'developer' } },
  );
  t.is(first.status, 201);
  tokens.push(tokenOf(first.body.url));
  const sent = await eventOf<InvitationData>(
    stream,
    'invitation.created',
    (d) => d.invitation.id === first.body.invitation.id,
  );
  t.is(sent.org_id, orgId);
  t.deepEqual(sent.data, { invitation: first.body.invitation });

  const second = await owner.call<{ invitation: InvitationView; url: string }>(
    'POST',
    `${people}/invitations`,
    { body: { email: 'grace@example.com', role: 'viewer' } },
  );
  t.is(second.status, 201);
  tokens.push(tokenOf(second.body.url));
  const replaced = await eventOf<InvitationData>(
    stream,
    'invitation.deleted',
    (d) => d.invitation.id === first.body.invitation.id,
  );
  t.deepEqual(replaced.data, { invitation: first.body.invitation, reason: 'replaced' });
  await eventOf<InvitationData>(
    stream,
    'invitation.created',
    (d) => d.invitation.id === second.body.invitation.id && d.invitation.role === 'viewer',
  );

  const withdrawn = await owner.call(
    'DELETE',
    `${people}/invitations/${second.body.invitation.id}`,
  );
  t.is(withdrawn.status, 204);
  const revoked = await eventOf<InvitationData>(
    stream,
    'invitation.deleted',
    (d) => d.invitation.id === second.body.invitation.id,
  );
  t.is(revoked.data.reason, 'revoked');

  // Accepted: the invitation goes and the member comes, in the API's shape.
  const third = await owner.call<{ invitation: InvitationView; url: string }>(
    'POST',
    `${people}/invitations`,
    { body: { email: 'linus@example.com', role: 'developer' } },
  );
  t.is(third.status, 201);
  tokens.push(tokenOf(third.body.url));
  const newcomer = new Browser(sys.url);
  const accepted = await newcomer.accept(third.body.url, PASSWORD, 'Linus');
  t.is(accepted.status, 200);
  const used = await eventOf<InvitationData>(
    stream,
    'invitation.deleted',
    (d) => d.invitation.id === third.body.invitation.id,
  );
  t.is(used.data.reason, 'accepted');
  const joined = await eventOf<MemberData>(
    stream,
    'member.created',
    (d) => d.member.person_id === newcomer.personId,
  );
  const list = await owner.call<{ items: MemberView[] }>('GET', `${people}/people`);
  t.deepEqual(
    joined.data.member,
    list.body.items.find((m) => m.person_id === newcomer.personId),
  );
  t.like(joined.data.member, {
    email: 'linus@example.com',
    display_name: 'Linus',
    role: 'developer',
  });

  const changed = await owner.call<{ member: MemberView }>(
    'PATCH',
    `${people}/people/${newcomer.personId}`,
    { body: { role: 'viewer' } },
  );
  t.is(changed.status, 200);
  const updated = await eventOf<MemberData>(
    stream,
    'member.updated',
    (d) => d.member.person_id === newcomer.personId,
  );
  t.deepEqual(updated.data.member, changed.body.member);
  t.is(updated.data.member.role, 'viewer');

  const removed = await owner.call('DELETE', `${people}/people/${newcomer.personId}`);
  t.is(removed.status, 204);
  const deleted = await eventOf<MemberData>(
    stream,
    'member.deleted',
    (d) => d.member.person_id === newcomer.personId,
  );
  t.deepEqual(deleted.data.member, changed.body.member);

  // No event carries an invitation's token.
  for (const m of stream.messages) {
    for (const token of tokens) t.false(m.data.includes(token), m.event);
  }
  // The other organization's stream carried none of this: an invitation there, seen on it, shows
  // the feed (which both streams share) has handed it everything before.
  const marker = await otherOwner.call<{ invitation: InvitationView }>(
    'POST',
    `/console/v1/orgs/${otherId}/invitations`,
    { body: { email: 'marker@example.com', role: 'viewer' } },
  );
  t.is(marker.status, 201);
  await eventOf<InvitationData>(
    other,
    'invitation.created',
    (d) => d.invitation.id === marker.body.invitation.id,
  );
  t.deepEqual(
    other.messages.filter((m) => bodyOf(m).org_id !== otherId || m.data.includes(orgId)),
    [],
  );
  t.false(stream.messages.some((m) => m.data.includes(marker.body.invitation.id)));
});

test('webhook endpoints made, changed, rotated, disabled by a 410 and deleted arrive without their secret, on their organization stream only', async (t) => {
  const { sys, orgId, otherId, hooks, otherHooks, gone } = t.context;
  const stream = await openStream(streamUrl(t, orgId), { token: hooks });
  const other = await openStream(streamUrl(t, otherId), { token: otherHooks });
  t.teardown(() => {
    stream.close();
    other.close();
  });
  t.is(stream.status, 200);
  const base = `/v1/orgs/${orgId}/webhooks`;
  const secrets: string[] = [];

  const made = await call<{ endpoint: EndpointView; secret: string }>(sys.url, 'POST', base, {
    token: hooks,
    body: { url: gone.url, events: ['job.printed'], description: 'till' },
  });
  t.is(made.status, 201);
  secrets.push(made.body.secret);
  const id = made.body.endpoint.id;
  const created = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.created',
    (d) => d.endpoint.id === id,
  );
  t.is(created.org_id, orgId);
  t.deepEqual(created.data, { endpoint: made.body.endpoint });

  const patched = await call<{ endpoint: EndpointView }>(sys.url, 'PATCH', `${base}/${id}`, {
    token: hooks,
    body: { description: 'front till' },
  });
  t.is(patched.status, 200);
  const changed = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.updated',
    (d) => d.endpoint.id === id && d.endpoint.description === 'front till',
  );
  t.deepEqual(changed.data.endpoint, patched.body.endpoint);

  const rotated = await call<{ endpoint: EndpointView; secret: string }>(
    sys.url,
    'POST',
    `${base}/${id}/rotate`,
    { token: hooks, body: {} },
  );
  t.is(rotated.status, 200);
  secrets.push(rotated.body.secret);
  const afterRotation = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.updated',
    (d) => d.endpoint.id === id && d.endpoint.secret_rotated_at !== null,
  );
  t.deepEqual(afterRotation.data.endpoint, rotated.body.endpoint);

  // The test ping's 410 disables the endpoint: Spool's own change arrives too.
  const ping = await call(sys.url, 'POST', `${base}/${id}/test`, { token: hooks, body: {} });
  t.true(ping.status < 300, `test answered ${ping.status}`);
  const disabled = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.updated',
    (d) => d.endpoint.id === id && !d.endpoint.enabled,
  );
  t.is(disabled.data.endpoint.disabled_reason, 'gone');
  const read = await call<{ endpoint: EndpointView }>(sys.url, 'GET', `${base}/${id}`, {
    token: hooks,
  });
  t.deepEqual(disabled.data.endpoint, read.body.endpoint);

  const removed = await call(sys.url, 'DELETE', `${base}/${id}`, { token: hooks });
  t.true(removed.status < 300);
  const deleted = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.deleted',
    (d) => d.endpoint.id === id,
  );
  t.deepEqual(deleted.data.endpoint, read.body.endpoint);

  // No endpoint event carries a secret, nor a field named for one.
  for (const m of stream.messages.filter((m) => m.event.startsWith('webhook_endpoint.'))) {
    for (const secret of secrets) t.false(m.data.includes(secret), m.event);
    t.false(/"(previous_)?secret"/.test(m.data), m.event);
  }
  // The other organization's stream carried none of it.
  const marker = await call<{ endpoint: EndpointView; secret: string }>(
    sys.url,
    'POST',
    `/v1/orgs/${otherId}/webhooks`,
    { token: otherHooks, body: { url: gone.url, events: ['job.printed'] } },
  );
  t.is(marker.status, 201);
  await eventOf<EndpointData>(
    other,
    'webhook_endpoint.created',
    (d) => d.endpoint.id === marker.body.endpoint.id,
  );
  t.false(other.messages.some((m) => m.data.includes(id) || bodyOf(m).org_id !== otherId));
  t.false(stream.messages.some((m) => m.data.includes(marker.body.endpoint.id)));
});

test('an endpoint whose attempts start failing, and then succeed again, arrives updated with failing_since set and then cleared', async (t) => {
  const { sys, orgId, hooks } = t.context;
  let status = 500;
  const flaky = await startReceiver(() => ({ status }));
  t.teardown(() => flaky.close());
  const stream = await openStream(streamUrl(t, orgId, '?types=webhook_endpoint.updated'), {
    token: hooks,
  });
  t.teardown(() => stream.close());
  const base = `/v1/orgs/${orgId}/webhooks`;
  const made = await call<{ endpoint: EndpointView }>(sys.url, 'POST', base, {
    token: hooks,
    body: { url: flaky.url, events: ['job.printed'] },
  });
  t.is(made.status, 201);
  const id = made.body.endpoint.id;
  const ping = () => call(sys.url, 'POST', `${base}/${id}/test`, { token: hooks, body: {} });
  t.true((await ping()).status < 300);
  const failing = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.updated',
    (d) => d.endpoint.id === id && d.endpoint.failing_since !== null,
  );
  t.true(failing.data.endpoint.enabled);
  status = 200;
  t.true((await ping()).status < 300);
  const recovered = await eventOf<EndpointData>(
    stream,
    'webhook_endpoint.updated',
    (d) => d.endpoint.id === id && d.endpoint.failing_since === null,
  );
  t.true(recovered.data.endpoint.enabled);
});

test('a key without webhooks:read gets no endpoint events, and naming them answers 403; no key asks for people events', async (t) => {
  const { sys, orgId } = t.context;
  const jobsOnly = await createKey(sys.url, orgId, { scopes: ['jobs:read'] });
  const asked = await openStream(streamUrl(t, orgId, '?types=webhook_endpoint.created'), {
    token: jobsOnly.secret,
  });
  t.is(asked.status, 403);
  t.regex(await asked.body(), /webhooks:read/);
  const people = await openStream(streamUrl(t, orgId, '?types=member.created'), {
    token: t.context.hooks,
  });
  t.is(people.status, 403);
  t.regex(await people.body(), /signed-in members/);
  const invitations = await openStream(streamUrl(t, orgId, '?types=invitation.deleted'), {
    token: t.context.hooks,
  });
  t.is(invitations.status, 403);

  // Without types, the jobs-only key's stream leaves the endpoints' events out.
  const stream = await openStream(streamUrl(t, orgId), { token: jobsOnly.secret });
  const reader = await openStream(streamUrl(t, orgId), { token: t.context.hooks });
  t.teardown(() => {
    stream.close();
    reader.close();
  });
  const made = await call<{ endpoint: EndpointView }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/webhooks`,
    {
      token: OPERATOR_TOKEN,
      body: { url: t.context.gone.url, events: ['job.printed'] },
    },
  );
  t.is(made.status, 201);
  await eventOf<EndpointData>(
    reader,
    'webhook_endpoint.created',
    (d) => d.endpoint.id === made.body.endpoint.id,
  );
  t.false(stream.messages.some((m) => m.event.startsWith('webhook_endpoint.')));
});
