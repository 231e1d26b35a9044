/**
 * Pools and routing in the console, in a real browser, as a person uses them: a pool created on
 * the Pools page is listed and a job sent to it shows its pool and the printer it was routed to;
 * a pool job that waits for a member says so, can be moved by hand, and follows a move made
 * elsewhere without a reload; a pool with waiting jobs is not deleted; a viewer sees pools but
 * cannot change them.
 * Chromium through playwright-core against a real Spool whose station `desk` prints to a folder,
 * beside a station that went offline with its printers `annex` and `annex2` last reported ready.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { member, PASSWORD } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { call, createStation, eventually } from './helpers/system.js';

const OWNER = 'owner@example.com';
const VIEWER = 'viewer@example.com';

let org: PrintingOrg;
let browser: Browser;
/** The printers of the station that went offline. */
let annex: string;
let annex2: string;
const contexts: BrowserContext[] = [];
/** On a job's page, what its details say after `Printer`. */
const PRINTER = 'xpath=//dt[text()="Printer"]/following-sibling::dd[1]';

type Printers = { printers: { id: string; name: string; station_online: boolean }[] };

async function printers() {
  const res = await call<Printers>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/printers`, {
    token: org.key,
  });
  return res.body.printers;
}

test.before(async () => {
  [org, browser] = await Promise.all([startPrintingOrg(), launchChromium()]);
  await member(org.sys.url, org.orgId, 'owner', OWNER);
  await member(org.sys.url, org.orgId, 'viewer', VIEWER);
  const station = await createStation(org.sys.url, org.orgId, { name: 'Annex' });
  const link = await connectLink(org.sys.linkAddress, station.token, [
    printer('annex'),
    printer('annex2'),
  ]);
  const annexes = (ps: Printers['printers'], online: boolean) =>
    ['annex', 'annex2'].every((n) => ps.some((p) => p.name === n && p.station_online === online));
  const listed = await eventually(printers, (ps) => annexes(ps, true));
  link.close();
  await eventually(printers, (ps) => annexes(ps, false));
  annex = listed.find((p) => p.name === 'annex')?.id as string;
  annex2 = listed.find((p) => p.name === 'annex2')?.id as string;
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await org?.stop();
});

/** `email`, signed in, on `path` of the console. */
async function signedIn(email: string, path: string, width = 1280, height = 800): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
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

async function api<T>(method: string, path: string, body?: unknown) {
  return call<T>(org.sys.url, method, `/v1/orgs/${org.orgId}${path}`, {
    token: org.key,
    ...(body === undefined ? {} : { body }),
  });
}

async function poolJob(poolId: string, title: string): Promise<string> {
  const res = await api<{ job: { id: string } }>('POST', '/jobs', {
    pool_id: poolId,
    title,
    content: { type: 'text', data: title },
  });
  if (res.status !== 201) throw new Error(`job: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.job.id;
}

test.serial(
  'a pool created on the Pools page is listed, and its job shows the pool and the printer it was routed to',
  async (t) => {
    const page = await signedIn(OWNER, '/');
    await page.getByRole('link', { name: 'Pools' }).click();
    await page.getByRole('heading', { name: 'Pools', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Create pool' }).click();
    await page.getByLabel('Name').fill('Reception');
    // Checked in this order: desk first, the offline annex as its fall-back.
    await page.getByLabel('desk', { exact: true }).check();
    await page.getByLabel('annex', { exact: true }).check();
    await page.getByLabel(/^Ordered/).check();
    t.is(await page.getByLabel('Failover after (seconds)').inputValue(), '30');
    await page.getByRole('button', { name: 'Create pool' }).click();
    await page.getByRole('region', { name: 'New pool' }).waitFor({ state: 'detached' });

    const row = page.getByRole('row', { name: /Reception/ });
    await row.waitFor();
    t.is(await row.locator('td[data-label="Members"]').textContent(), 'desk → annex');
    t.is(await row.locator('td[data-label="Strategy"]').textContent(), 'ordered');
    t.is(await row.locator('td[data-label="Failover after"]').textContent(), '30 s');

    // Edited: it never fails over.
    await row.getByRole('button', { name: 'Edit' }).click();
    const form = page.getByRole('region', { name: 'Edit pool Reception' });
    const failover = form.getByLabel('Failover after (seconds)');
    t.is(await failover.inputValue(), '30');
    await failover.fill('0');
    t.is(await failover.inputValue(), '0');
    await form.getByRole('button', { name: 'Save pool' }).click();
    // Saved, the form closes; if it stays, what it says is why.
    await form.waitFor({ state: 'detached' }).catch(async (error: Error) => {
      throw new Error(`${error.message}\nthe form says: ${await form.textContent()}`);
    });
    await row.locator('td[data-label="Failover after"]', { hasText: 'never' }).waitFor();

    const pools = await api<{ items: { id: string; name: string }[] }>('GET', '/pools');
    const pool = pools.body.items.find((p) => p.name === 'Reception');
    t.truthy(pool, 'the API lists the pool the page created');
    const jobId = await poolJob(pool?.id as string, 'Routed receipt');
    await page.goto(`${org.sys.url}/console/jobs/${jobId}`);
    const details = page.locator('.details');
    await details.getByRole('link', { name: 'Reception' }).waitFor();
    await details
      .locator(PRINTER)
      .filter({ hasText: /^desk$/ })
      .waitFor();
    await page
      .locator('.timeline')
      .getByText(/routed to desk/)
      .waitFor();

    // The job list names the printer, and the pool it was chosen from.
    await page.goto(`${org.sys.url}/console/jobs`);
    const listed = page.locator(`tr[data-job-id="${jobId}"] td[data-label="Printer"]`);
    await listed.getByText('pool Reception').waitFor();
    t.regex((await listed.textContent()) ?? '', /^desk/);

    // A link on the job page leads to the Pools page.
    await page.goto(`${org.sys.url}/console/jobs/${jobId}`);
    await details.getByRole('link', { name: 'Reception' }).click();
    await page.getByRole('heading', { name: 'Pools', level: 1 }).waitFor();
  },
);

test.serial(
  'a pool job waiting for a member says so, keeps its pool from deletion, and moves by hand and live',
  async (t) => {
    const created = await api<{ pool: { id: string } }>('POST', '/pools', {
      name: 'Annex room',
      printer_ids: [annex, annex2],
      failover_after: 0,
    });
    t.is(created.status, 201);
    const jobId = await poolJob(created.body.pool.id, 'Waiting label');

    const page = await signedIn(OWNER, '/jobs');
    const cell = page.locator(`tr[data-job-id="${jobId}"] td[data-label="Printer"]`);
    // The pool's name replaces its id once the page has read the pools.
    await cell.filter({ hasText: 'waiting for a member of Annex room' }).waitFor();
    t.regex((await cell.textContent()) ?? '', /waiting for a member of Annex room/);

    // Its pool cannot be deleted while the job waits: the page says what the API answers.
    await page.getByRole('link', { name: 'Pools' }).click();
    const row = page.getByRole('row', { name: /Annex room/ });
    await row.getByRole('button', { name: 'Delete pool' }).click();
    await page
      .getByRole('dialog', { name: 'Delete the pool Annex room?' })
      .getByRole('button', { name: 'Delete pool' })
      .click();
    await page
      .getByRole('alert')
      .getByText(/1 job of this pool waits for a member/)
      .waitFor();
    t.is((await api('GET', `/pools/${created.body.pool.id}`)).status, 200);

    await page.goto(`${org.sys.url}/console/jobs/${jobId}`);
    const printerCell = page.locator('.details').locator(PRINTER);
    await printerCell.filter({ hasText: /^waiting for a member$/ }).waitFor();
    await page.locator('.details').getByRole('link', { name: 'Annex room' }).waitFor();

    await page.getByRole('button', { name: 'Move', exact: true }).click();
    await page.getByLabel('To printer').selectOption({ label: 'annex' });
    await page.getByRole('button', { name: 'Move job' }).click();
    await printerCell.filter({ hasText: /^annex$/ }).waitFor();
    await page
      .locator('.timeline')
      .getByText(/routed to annex · by owner person/)
      .waitFor();

    // Moved elsewhere (by the API), the page follows without a reload.
    const moved = await api('POST', `/jobs/${jobId}/move`, { printer_id: annex2 });
    t.is(moved.status, 200);
    await printerCell.filter({ hasText: /^annex2$/ }).waitFor();
    await page
      .locator('.timeline')
      .getByText(/routed to annex2/)
      .waitFor();

    // No job waits for a member now: the pool can go.
    await page.goto(`${org.sys.url}/console/pools`);
    await row.getByRole('button', { name: 'Delete pool' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete pool' }).click();
    await row.waitFor({ state: 'detached' });
    t.is((await api('GET', `/pools/${created.body.pool.id}`)).status, 404);
  },
);

test.serial(
  'a viewer sees the pools and where a job went, and nothing to change them',
  async (t) => {
    const pools = await api<{ items: { id: string; name: string }[] }>('GET', '/pools');
    const pool = pools.body.items.find((p) => p.name === 'Reception');
    const jobId = await poolJob(pool?.id as string, 'Viewer receipt');
    const page = await signedIn(VIEWER, '/pools');
    await page.getByRole('row', { name: /Reception/ }).waitFor();
    t.is(await page.getByRole('button', { name: 'Create pool' }).count(), 0);
    t.is(await page.getByRole('button', { name: 'Edit' }).count(), 0);
    t.is(await page.getByRole('button', { name: 'Delete pool' }).count(), 0);

    await page.goto(`${org.sys.url}/console/jobs/${jobId}`);
    await page.locator('.details').getByRole('link', { name: 'Reception' }).waitFor();
    t.is(await page.getByRole('button', { name: 'Move', exact: true }).count(), 0);
  },
);

test.serial("on a phone, the Pools page, its form and a job's Move are all in sight", async (t) => {
  const waiting = await api<{ pool: { id: string } }>('POST', '/pools', {
    name: 'Phone pool',
    printer_ids: [annex, annex2],
  });
  const jobId = await poolJob(waiting.body.pool.id, 'Phone label');
  const phone = await signedIn(OWNER, '/pools', 390, 844);
  /** The controls and links of the page's main part that reach past either side. */
  const outside = () =>
    phone.evaluate<string[]>(`[...document.querySelectorAll('main :is(button, select, input, a)')]
      .filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && (r.left < 0 || r.right > window.innerWidth);
      })
      .map((e) => (e.getAttribute('aria-label') || e.textContent).trim())`);
  const fits = () =>
    phone.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
  await phone.getByRole('button', { name: 'Delete pool' }).first().waitFor();
  t.deepEqual(await outside(), [], 'the list');
  await phone.getByRole('button', { name: 'Create pool' }).click();
  await phone.getByLabel('annex2', { exact: true }).check();
  await phone.getByLabel('annex', { exact: true }).check();
  await phone.getByRole('button', { name: 'Move annex up' }).waitFor();
  t.deepEqual(await outside(), [], 'the form');
  t.true(await fits(), 'the Pools page fits a phone');

  await phone.goto(`${org.sys.url}/console/jobs/${jobId}`);
  await phone.getByRole('button', { name: 'Move', exact: true }).click();
  await phone.getByRole('button', { name: 'Move job' }).waitFor();
  t.deepEqual(await outside(), [], 'the job page');
  t.true(await fits(), 'the job page fits a phone');
});
