/**
 * Pending invitations: listed and revoked by an organization's admins (console) and by the operator
 * (admin API), and superseded when the same email is invited again. A withdrawn link answers as an
 * unknown one does.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import {
  Browser,
  type ErrorBody,
  type InvitationAnswer,
  invite,
  member,
  PASSWORD,
  tokenOf,
} from './helpers/console.js';
import {
  type Answer,
  call,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

// One test moves the clock by days; they run one after another.
const test = anyTest.serial as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface Pending {
  id: string;
  email: string;
  role: string;
  created_at: string;
  expires_at: string;
  invited_by: { person_id: string; email: string; display_name: string } | null;
}

const operator = <T>(sys: TestSystem, method: string, path: string, body?: unknown) =>
  call<T>(sys.url, method, `/admin/v1${path}`, {
    token: OPERATOR_TOKEN,
    ...(body === undefined ? {} : { body }),
  });

/** What a browser opening the link is told, and what accepting it answers. */
async function linkAnswers(sys: TestSystem, url: string) {
  const opened = await call<ErrorBody>(sys.url, 'GET', `/console/v1/invitations/${tokenOf(url)}`);
  const accepted = await new Browser(sys.url).accept(url, PASSWORD);
  return { opened, accepted: accepted as unknown as Answer<ErrorBody> };
}

/** The error a link that never existed gets, without its request id. */
async function unknownLinkError(sys: TestSystem) {
  const res = await call<ErrorBody>(
    sys.url,
    'GET',
    `/console/v1/invitations/svc_inv_${'A'.repeat(43)}`,
  );
  const { request_id: _, ...error } = res.body.error;
  return error;
}

const withoutRequestId = (body: ErrorBody) => {
  const { request_id: _, ...error } = body.error;
  return error;
};

test('an admin revokes an invitation: its link answers 404 like an unknown one and cannot be accepted', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Revoking');
  const admin = await member(sys.url, orgId, 'admin', 'revoker@example.com');
  const sent = await admin.call<InvitationAnswer>('POST', `/console/v1/orgs/${orgId}/invitations`, {
    body: { email: 'mistake@example.com', role: 'developer' },
  });
  t.is(sent.status, 201);
  const path = `/console/v1/orgs/${orgId}/invitations/${sent.body.invitation.id}`;

  // A second apart, so that the audit log's newest-first order is the order of the requests.
  sys.clock.advance(1000);
  const revoked = await admin.call('DELETE', path);
  t.is(revoked.status, 204);
  const { opened, accepted } = await linkAnswers(sys, sent.body.url);
  t.is(opened.status, 404);
  t.deepEqual(withoutRequestId(opened.body), await unknownLinkError(sys));
  t.is(accepted.status, 404);
  t.is(accepted.body.error.code, 'not_found');
  t.falsy(sessionOf(accepted), 'nobody is signed in');

  // It is gone from both lists, and revoking it again changes nothing.
  const list = await admin.call<{ items: Pending[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/invitations`,
  );
  t.deepEqual(list.body.items, []);
  const people = await admin.call<{ invitations: unknown[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/people`,
  );
  t.deepEqual(people.body.invitations, []);
  sys.clock.advance(1000);
  t.is((await admin.call('DELETE', path)).status, 204);
  const got = await operator<{
    invitation: {
      used_at: null;
      revoked_at: string;
      created_at: string;
      invited_by: { person_id: string; email: string } | null;
    };
  }>(sys, 'GET', `/orgs/${orgId}/invitations/${sent.body.invitation.id}`);
  t.is(got.body.invitation.used_at, null);
  t.regex(got.body.invitation.revoked_at, /^\d{4}-\d\d-\d\dT/);
  // The operator sees who sent it and when, as the console's list of pending ones says.
  t.regex(got.body.invitation.created_at, /^\d{4}-\d\d-\d\dT/);
  t.true(got.body.invitation.created_at < got.body.invitation.revoked_at);
  t.like(got.body.invitation.invited_by, {
    person_id: admin.personId,
    email: 'revoker@example.com',
  });

  // The audit log names who revoked which invitation, as it does for who invited.
  const audit = await operator<{
    items: { actor: string; method: string; route: string; target: Record<string, string> }[];
  }>(sys, 'GET', `/audit?org=${orgId}&actor=person:${admin.personId}`);
  t.deepEqual(
    audit.body.items.map((e) => [e.method, e.route, e.target.id ?? null]),
    [
      ['DELETE', '/console/v1/orgs/:org/invitations/:id', sent.body.invitation.id],
      ['DELETE', '/console/v1/orgs/:org/invitations/:id', sent.body.invitation.id],
      ['POST', '/console/v1/orgs/:org/invitations', null],
    ],
  );
});

function sessionOf(res: Answer<unknown>): string | undefined {
  return res.headers.getSetCookie().find((c) => c.startsWith('spool_session='));
}

test('inviting the same email again supersedes the earlier link: only the newest is accepted', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Resending');
  const owner = await member(sys.url, orgId, 'owner', 'resender@example.com');
  const first = await invite(sys.url, orgId, 'twice@example.com', 'viewer');
  const second = await owner.call<InvitationAnswer>(
    'POST',
    `/console/v1/orgs/${orgId}/invitations`,
    { body: { email: 'Twice@Example.com', role: 'developer' } },
  );
  t.is(second.status, 201);

  const listed = await owner.call<{ items: Pending[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/invitations`,
  );
  t.deepEqual(
    listed.body.items.map((i) => [i.id, i.email, i.role]),
    [[second.body.invitation.id, 'twice@example.com', 'developer']],
  );
  const stale = await linkAnswers(sys, first.url);
  t.is(stale.opened.status, 404);
  t.deepEqual(withoutRequestId(stale.opened.body), await unknownLinkError(sys));
  t.is(stale.accepted.status, 404);

  const fresh = await new Browser(sys.url).accept(second.body.url, PASSWORD);
  t.is(fresh.status, 200);
  t.deepEqual(
    fresh.body.orgs.map((o) => [o.id, o.role]),
    [[orgId, 'developer']],
  );
  const got = await operator<{ invitation: { revoked_at: string | null } }>(
    sys,
    'GET',
    `/orgs/${orgId}/invitations/${first.invitation.id}`,
  );
  t.not(got.body.invitation.revoked_at, null, 'the superseded one shows when it stopped');
});

test('the list shows pending invitations only, with who sent each, and never a token', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Listing');
  // Expired before anyone else is invited or signed in.
  await invite(sys.url, orgId, 'expired@example.com', 'viewer');
  sys.clock.advance(7 * 24 * 60 * 60 * 1000);
  const admin = await member(sys.url, orgId, 'admin', 'lister@example.com');
  await member(sys.url, orgId, 'viewer', 'accepted@example.com');
  const revoked = await invite(sys.url, orgId, 'revoked@example.com', 'viewer');
  t.is(
    (await operator(sys, 'DELETE', `/orgs/${orgId}/invitations/${revoked.invitation.id}`)).status,
    204,
  );
  const byOperator = await invite(sys.url, orgId, 'by-operator@example.com', 'developer');
  // Listed oldest first: a second later.
  sys.clock.advance(1000);
  const byAdmin = await admin.call<InvitationAnswer>(
    'POST',
    `/console/v1/orgs/${orgId}/invitations`,
    {
      body: { email: 'by-admin@example.com', role: 'viewer' },
    },
  );
  // Another organization's pending invitation is not this one's.
  await invite(sys.url, await createOrg(sys.url, 'Elsewhere'), 'other-org@example.com', 'viewer');

  const res = await admin.call<{ items: Pending[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/invitations`,
  );
  t.is(res.status, 200);
  t.deepEqual(
    res.body.items.map((i) => ({ ...i, created_at: typeof i.created_at })),
    [
      {
        id: byOperator.invitation.id,
        email: 'by-operator@example.com',
        role: 'developer',
        created_at: 'string',
        expires_at: byOperator.invitation.expires_at,
        invited_by: null,
      },
      {
        id: byAdmin.body.invitation.id,
        email: 'by-admin@example.com',
        role: 'viewer',
        created_at: 'string',
        expires_at: byAdmin.body.invitation.expires_at,
        invited_by: {
          person_id: admin.personId,
          email: 'lister@example.com',
          display_name: 'admin person',
        },
      },
    ],
  );
  t.false(JSON.stringify(res.body).includes('svc_inv_'), 'no token, no link');

  // The operator gets the same, a page at a time.
  const first = await operator<{ items: Pending[]; next_cursor: string }>(
    sys,
    'GET',
    `/orgs/${orgId}/invitations?limit=1`,
  );
  t.is(first.status, 200);
  const rest = await operator<{ items: Pending[]; next_cursor: string }>(
    sys,
    'GET',
    `/orgs/${orgId}/invitations?cursor=${first.body.next_cursor}`,
  );
  t.deepEqual([...first.body.items, ...rest.body.items], res.body.items);
  t.is(rest.body.next_cursor, '');
});

test('listing and revoking need the role that invites: 403 below it, 404 for an unknown id', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Guarded');
  const admin = await member(sys.url, orgId, 'admin');
  const developer = await member(sys.url, orgId, 'developer');
  const pending = await invite(sys.url, orgId, 'guarded@example.com', 'viewer');
  const owners = await invite(sys.url, orgId, 'future-owner@example.com', 'owner');
  const base = `/console/v1/orgs/${orgId}/invitations`;

  for (const [method, path] of [
    ['GET', base],
    ['DELETE', `${base}/${pending.invitation.id}`],
  ] as const) {
    const res = await developer.call<ErrorBody>(method, path);
    t.is(res.status, 403, `${method} ${path}`);
    t.is(res.body.error.code, 'forbidden');
    t.is(res.body.error.message, 'this needs the admin role; you are a developer');
  }
  // As for inviting one, only owners withdraw an owner's invitation.
  const ownerInvite = await admin.call<ErrorBody>('DELETE', `${base}/${owners.invitation.id}`);
  t.is(ownerInvite.status, 403);
  t.regex(ownerInvite.body.error.message, /needs the owner role; you are an admin/);
  const replaced = await admin.call<ErrorBody>('POST', base, {
    body: { email: 'future-owner@example.com', role: 'viewer' },
  });
  t.is(replaced.status, 403, 'nor replace it with another');

  const elsewhere = await invite(
    sys.url,
    await createOrg(sys.url, 'Other'),
    'x@example.com',
    'viewer',
  );
  for (const id of [randomUUID(), 'not-an-id', elsewhere.invitation.id]) {
    const res = await admin.call<ErrorBody>('DELETE', `${base}/${id}`);
    t.is(res.status, 404, id);
    t.is(res.body.error.code, 'not_found');
    t.is(res.body.error.message, 'no such invitation in this organization');
    t.truthy(res.body.error.request_id);
    const byOperator = await operator<ErrorBody>(sys, 'DELETE', `/orgs/${orgId}/invitations/${id}`);
    t.is(byOperator.status, 404, id);
    t.is(byOperator.body.error.message, 'no such invitation in this organization');
  }
  const unknownOrg = await operator<ErrorBody>(sys, 'GET', `/orgs/${randomUUID()}/invitations`);
  t.is(unknownOrg.status, 404);
  t.is(unknownOrg.body.error.message, 'no such organization');

  // Nothing refused above changed anything: both links still work.
  for (const url of [pending.url, owners.url, elsewhere.url]) {
    t.is((await call(sys.url, 'GET', `/console/v1/invitations/${tokenOf(url)}`)).status, 200);
  }
});

test('an accepted invitation cannot be revoked (409): its person is a member', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Accepted');
  const sent = await invite(sys.url, orgId, 'joined@example.com', 'viewer');
  t.is((await new Browser(sys.url).accept(sent.url, PASSWORD)).status, 200);
  const res = await operator<ErrorBody>(
    sys,
    'DELETE',
    `/orgs/${orgId}/invitations/${sent.invitation.id}`,
  );
  t.is(res.status, 409);
  t.is(res.body.error.code, 'conflict');
  t.regex(res.body.error.message, /joined@example\.com accepted this invitation.*remove them/);
});
