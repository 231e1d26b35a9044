/**
 * The console's lists follow changes made elsewhere, in a real browser, without a reload: a key
 * made and revoked by the operator appears on and leaves the open Keys page, and a station made,
 * renamed and deleted does the same on the open Stations page, a pool made, changed and deleted on
 * the open Pools page, an invitation, its acceptance and the member's removal on the open People
 * page, and a webhook endpoint made, disabled and deleted on the open Webhooks page
 * (docs/realtime.md "Resource events"), and a person's own role changed elsewhere in the controls
 * their open console offers. Chromium through playwright-core against a real Spool.
 */
import anyTest from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { Browser as ConsoleBrowser, invite, member, PASSWORD } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

// One at a time: each test signs a person in, and six password checks and six browser pages at
// once on two busy cores kept sign-ins from answering in time.
const test = anyTest.serial;

const ADMIN = 'admin@example.com';

let sys: TestSystem;
let orgId: string;
let browser: Browser;
const contexts: BrowserContext[] = [];

test.before(async () => {
  [sys, browser] = await Promise.all([startTestSystem(), launchChromium()]);
  orgId = await createOrg(sys.url);
  await member(sys.url, orgId, 'admin', ADMIN);
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await sys?.stop();
});

/** A person (the admin by default), signed in, on `path` of the console, with the live stream open. */
async function signedIn(path: string, email = ADMIN): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${sys.url}/console/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  await page.goto(`${sys.url}/console${path}`);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  return page;
}

test('the Keys page shows a key the operator makes, and its revocation, without a reload', async (t) => {
  const page = await signedIn('/keys');
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  const made = await createKey(sys.url, orgId, { scopes: ['jobs:read'], name: 'made-elsewhere' });
  const row = page.getByRole('row').filter({ hasText: 'made-elsewhere' });
  await row.waitFor();
  const revoked = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/keys/${made.key.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.true(revoked.status < 300);
  await row.getByText(/revoked/i).waitFor();
  t.pass();
});

test('the Stations page shows a station made, renamed and deleted elsewhere without a reload', async (t) => {
  const page = await signedIn('/stations');
  const made = await createStation(sys.url, orgId, { name: 'Made elsewhere' });
  await page.getByRole('rowheader', { name: 'Made elsewhere' }).waitFor();
  const renamed = await call(sys.url, 'PATCH', `/admin/v1/orgs/${orgId}/stations/${made.id}`, {
    token: OPERATOR_TOKEN,
    body: { name: 'Renamed elsewhere' },
  });
  t.is(renamed.status, 200);
  await page.getByRole('rowheader', { name: 'Renamed elsewhere' }).waitFor();
  const gone = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/stations/${made.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.true(gone.status < 300);
  await page.getByRole('rowheader', { name: 'Renamed elsewhere' }).waitFor({ state: 'detached' });
  t.pass();
});

test('the Pools page shows a pool made, changed and deleted elsewhere without a reload', async (t) => {
  const station = await createStation(sys.url, orgId, { name: 'Pool station' });
  const link = await connectLink(sys.linkAddress, station.token, [printer('live-desk')]);
  t.teardown(() => link.close());
  const printers = await eventually(
    () =>
      call<{ items: { id: string }[] }>(
        sys.url,
        'GET',
        `/admin/v1/orgs/${orgId}/printers?station_id=${station.id}`,
        { token: OPERATOR_TOKEN },
      ),
    (res) => res.body.items.length === 1,
  );
  const printerId = printers.body.items[0]?.id as string;
  const page = await signedIn('/pools');
  await page.getByRole('heading', { name: 'Pools', level: 1 }).waitFor();
  const pools = `/admin/v1/orgs/${orgId}/pools`;
  const made = await call<{ pool: { id: string } }>(sys.url, 'POST', pools, {
    token: OPERATOR_TOKEN,
    body: { name: 'Made elsewhere', printer_ids: [printerId] },
  });
  t.is(made.status, 201);
  const row = page.getByRole('row').filter({ hasText: 'Made elsewhere' });
  await row.getByText('live-desk').waitFor();
  const changed = await call(sys.url, 'PATCH', `${pools}/${made.body.pool.id}`, {
    token: OPERATOR_TOKEN,
    body: { strategy: 'ordered' },
  });
  t.is(changed.status, 200);
  await row.getByText('ordered', { exact: true }).waitFor();
  const gone = await call(sys.url, 'DELETE', `${pools}/${made.body.pool.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.is(gone.status, 204);
  await row.waitFor({ state: 'detached' });
  t.pass();
});

test('the People page shows an invitation sent, accepted and its member removed elsewhere without a reload', async (t) => {
  const page = await signedIn('/people');
  await page.getByRole('heading', { name: 'People', level: 1 }).waitFor();
  const sent = await invite(sys.url, orgId, 'live-invitee@example.com', 'viewer');
  const pending = page
    .getByRole('table', { name: 'Pending invitations' })
    .getByRole('row')
    .filter({ hasText: 'live-invitee@example.com' });
  await pending.waitFor();
  const invitee = new ConsoleBrowser(sys.url);
  const accepted = await invitee.accept(sent.url, PASSWORD, 'Joined elsewhere');
  t.is(accepted.status, 200);
  const row = page.getByRole('rowheader', { name: 'Joined elsewhere' });
  await row.waitFor();
  await pending.waitFor({ state: 'detached' });
  const removed = await call(
    sys.url,
    'DELETE',
    `/admin/v1/orgs/${orgId}/people/${invitee.personId}`,
    { token: OPERATOR_TOKEN },
  );
  t.true(removed.status < 300);
  await row.waitFor({ state: 'detached' });
  t.pass();
});

test('the Webhooks page shows an endpoint made, disabled and deleted elsewhere without a reload', async (t) => {
  const page = await signedIn('/webhooks');
  const key = await createKey(sys.url, orgId, { scopes: ['webhooks:read', 'webhooks:write'] });
  const url = 'http://127.0.0.1:9/made-elsewhere';
  const made = await call<{ endpoint: { id: string } }>(
    sys.url,
    'POST',
    `/v1/orgs/${orgId}/webhooks`,
    { token: key.secret, body: { url, events: ['job.printed'] } },
  );
  t.is(made.status, 201);
  const heading = page.getByRole('heading', { name: url });
  await heading.waitFor();
  const panel = page.getByRole('region', { name: url });
  const disabled = await call(
    sys.url,
    'PATCH',
    `/v1/orgs/${orgId}/webhooks/${made.body.endpoint.id}`,
    { token: key.secret, body: { enabled: false } },
  );
  t.is(disabled.status, 200);
  await panel.getByText('disabled (operator)').waitFor();
  const gone = await call(
    sys.url,
    'DELETE',
    `/v1/orgs/${orgId}/webhooks/${made.body.endpoint.id}`,
    { token: key.secret },
  );
  t.true(gone.status < 300);
  await heading.waitFor({ state: 'detached' });
  t.pass();
});

test("a person's own role changed elsewhere shows in their open console without a reload", async (t) => {
  const email = 'promoted@example.com';
  const person = await member(sys.url, orgId, 'viewer', email);
  const page = await signedIn('/keys', email);
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  const newKey = page.getByRole('heading', { name: 'New key' });
  t.is(await newKey.count(), 0, 'a viewer is offered no new key');
  const changed = await call(
    sys.url,
    'PATCH',
    `/admin/v1/orgs/${orgId}/people/${person.personId}`,
    { token: OPERATOR_TOKEN, body: { role: 'developer' } },
  );
  t.is(changed.status, 200);
  await newKey.waitFor();
  t.pass();
});
