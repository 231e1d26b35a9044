/**
 * The console's lists follow changes made elsewhere, in a real browser, without a reload: a key
 * made and revoked by the operator appears on and leaves the open Keys page, and a station made,
 * renamed and deleted does the same on the open Stations page (docs/realtime.md "Resource
 * events"). Chromium through playwright-core against a real Spool.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { member, PASSWORD } from './helpers/console.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

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

/** The admin, signed in, on `path` of the console, with the live stream open. */
async function signedIn(path: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${sys.url}/console/`);
  await page.getByLabel('Email').fill(ADMIN);
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
