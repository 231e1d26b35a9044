/**
 * A platform in the console, in a real browser, as a person uses it (DESIGN §5, "Platforms"): the
 * Overview draws the jobs of the last 30 days as a chart and says the same figures in words and
 * in a table; the Organizations page creates a child organization, lists it with its usage, and
 * deletes it after asking; a viewer of a parent sees its children but cannot change them.
 * Chromium through playwright-core against a real Spool whose station `desk` prints to a folder.
 * Usage is rolled up about once a minute: the tests move Spool's clock past the rollup's settling
 * time and run a round, as the minute's timer would.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { member, PASSWORD } from './helpers/console.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { call, createStation, eventually } from './helpers/system.js';

const OWNER = 'owner@example.com';
const VIEWER = 'viewer@example.com';

let org: PrintingOrg;
let browser: Browser;
const contexts: BrowserContext[] = [];
const links: LinkClient[] = [];

test.before(async () => {
  [org, browser] = await Promise.all([startPrintingOrg(), launchChromium()]);
  await member(org.sys.url, org.orgId, 'owner', OWNER);
  await member(org.sys.url, org.orgId, 'viewer', VIEWER);
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  for (const l of links) l.close();
  await browser?.close();
  await org?.stop();
});

/** `email`, signed in, on `path` of the console. */
async function signedIn(email: string, path = '/'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${org.sys.url}/console/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  if (path !== '/') await page.goto(`${org.sys.url}/console${path}`);
  return page;
}

/** Calls the API of `orgId` (the parent's unless named) with the parent's key. */
async function api<T>(method: string, path: string, body?: unknown, orgId = org.orgId) {
  return call<T>(org.sys.url, method, `/v1/orgs/${orgId}${path}`, {
    token: org.key,
    ...(body === undefined ? {} : { body }),
  });
}

async function createJob(printerId: string, title: string, orgId = org.orgId): Promise<string> {
  const res = await api<{ job: { id: string } }>(
    'POST',
    '/jobs',
    { printer_id: printerId, title, content: { type: 'text', data: title } },
    orgId,
  );
  if (res.status !== 201) throw new Error(`job: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.job.id;
}

/** What a minute of Spool's time does for usage: the rollup counts what happened before it. */
async function rollUp(): Promise<void> {
  org.sys.clock.advance(2 * 60_000);
  // A round stops at 00:00 UTC; a second one counts the rest.
  await org.sys.system.usage.runOnce();
  await org.sys.system.usage.runOnce();
}

test.serial(
  'the Overview charts the jobs of the last 30 days, and says their figures in words and in a table',
  async (t) => {
    const page = await signedIn(OWNER);
    await page.getByText('No jobs in the last 30 days.').waitFor();
    t.is(await page.locator('canvas').count(), 0, 'nothing is drawn while there is nothing');

    // Spool's clock stands still unless moved: every job is created on this UTC day.
    const day = org.sys.clock.now().toISOString().slice(0, 10);
    const ids = await Promise.all(['one', 'two', 'three'].map((n) => createJob(org.printerId, n)));
    await eventually(
      () => Promise.all(ids.map((id) => api<{ job: { status: string } }>('GET', `/jobs/${id}`))),
      (jobs) => jobs.every((j) => j.body.job.status === 'printed'),
      30_000,
    );
    await rollUp();
    await page.reload();

    const chart = page.getByRole('img', { name: /jobs created, printed and failed per day/ });
    await chart.waitFor();
    // Chart.js has drawn on it: some of its pixels are painted. Asked from here, not polled in
    // the page: the console's CSP forbids the eval a polling predicate needs there.
    const painted = `(() => {
      const canvas = document.querySelector('canvas');
      const data = canvas?.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data;
      return data ? data.some((v, i) => i % 4 === 3 && v > 0) : false;
    })()`;
    await eventually(
      () => page.evaluate<boolean>(painted),
      (drawn) => drawn,
      15_000,
    );
    await page
      .getByText('3 jobs created in the last 30 days, 3 printed and 0 failed.', { exact: false })
      .waitFor();

    await page.getByText('Jobs per day as a table').click();
    const table = page.getByRole('table', { name: 'Jobs per day' });
    t.is(await table.locator('tbody tr').count(), 30, 'one row a day');
    const today = table.locator('tbody tr', { has: page.locator(`time[datetime="${day}"]`) });
    t.is(await today.locator('td[data-label="Created"]').textContent(), '3');
    t.is(await today.locator('td[data-label="Printed"]').textContent(), '3');
    t.is(await today.locator('td[data-label="Failed"]').textContent(), '0');
  },
);

test.serial(
  'a child organization created on the Organizations page is listed with its usage, and deleted after asking',
  async (t) => {
    const page = await signedIn(OWNER);
    await page.getByRole('link', { name: 'Organizations' }).click();
    await page.getByRole('heading', { name: 'Organizations', level: 1 }).waitFor();
    await page.getByText('No child organizations yet').waitFor();
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByLabel('Name').fill('Corner Bakery');
    await page.getByLabel('Reference').fill('cust-42');
    await page.getByRole('button', { name: 'Create organization' }).click();

    const row = page.getByRole('row', { name: /Corner Bakery/ });
    await row.waitFor();
    t.is(await row.locator('td[data-label="Reference"]').textContent(), 'cust-42');
    await row.locator('td[data-label="Jobs created"]', { hasText: /^0$/ }).waitFor();

    // The child's customer prints: a station of its own, and jobs sent with the parent's key.
    const children = await api<{ items: { id: string; name: string }[] }>('GET', '/children');
    const child = children.body.items.find((c) => c.name === 'Corner Bakery');
    t.truthy(child, 'the API lists the child the page created');
    const childId = child?.id as string;
    const station = await createStation(org.sys.url, childId, { name: 'Bakery till' });
    links.push(await connectLink(org.sys.linkAddress, station.token, [printer('till')]));
    const printers = await eventually(
      () =>
        api<{ printers: { id: string; name: string }[] }>('GET', '/printers', undefined, childId),
      (r) => r.body.printers.some((p) => p.name === 'till'),
    );
    const till = printers.body.printers.find((p) => p.name === 'till')?.id as string;
    await createJob(till, 'bread', childId);
    await createJob(till, 'rolls', childId);
    await rollUp();

    await page.reload();
    await row.locator('td[data-label="Jobs created"]', { hasText: /^2$/ }).waitFor();

    // A viewer of the parent sees its children, and nothing to change them with.
    const viewer = await signedIn(VIEWER);
    await viewer.getByRole('link', { name: 'Organizations' }).click();
    const seen = viewer.getByRole('row', { name: /Corner Bakery/ });
    await seen.locator('td[data-label="Jobs created"]', { hasText: /^2$/ }).waitFor();
    t.is(await viewer.getByRole('button', { name: 'Create organization' }).count(), 0);
    t.is(await viewer.getByRole('button', { name: 'Delete organization' }).count(), 0);

    // Deleting asks first; Cancel keeps it.
    await row.getByRole('button', { name: 'Delete organization' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the organization Corner Bakery?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    t.true(await row.isVisible());
    await row.getByRole('button', { name: 'Delete organization' }).click();
    await dialog.getByRole('button', { name: 'Delete organization' }).click();
    await page.getByText('No child organizations yet').waitFor();
    const gone = await api('GET', `/children/${childId}`);
    t.is(gone.status, 404);

    // With no children left, a viewer's menu no longer offers the page.
    const asked = viewer.waitForResponse((r) => r.url().includes('/children?limit=1'));
    await viewer.reload();
    await asked;
    await viewer.getByText('No child organizations.').waitFor();
    t.is(await viewer.getByRole('link', { name: 'Organizations' }).count(), 0);
  },
);
