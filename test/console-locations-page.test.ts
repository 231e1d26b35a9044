/**
 * The Locations page, in a real browser, as a person uses it: an admin creates, renames and
 * deletes a location, is told why one with a station in it stays, and moves the station out on
 * the Stations page; the page follows locations and stations changed elsewhere without a reload;
 * a viewer sees the locations and nothing to change them; on a phone the page and its form are in
 * sight. Chromium through playwright-core against a real Spool.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { member, PASSWORD } from './helpers/console.js';
import {
  call,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const ADMIN = 'admin@example.com';
const VIEWER = 'viewer@example.com';

let sys: TestSystem;
let orgId: string;
let browser: Browser;
const contexts: BrowserContext[] = [];

test.before(async () => {
  [sys, browser] = await Promise.all([startTestSystem(), launchChromium()]);
  orgId = await createOrg(sys.url);
  await member(sys.url, orgId, 'admin', ADMIN);
  await member(sys.url, orgId, 'viewer', VIEWER);
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await sys?.stop();
});

/** `email`, signed in, on `path` of the console, with the live stream open. */
async function signedIn(email: string, path: string, width = 1280, height = 800): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${sys.url}/console/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  if (path !== '/') await page.goto(`${sys.url}/console${path}`);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  return page;
}

/** The operator's request on the organization's `path`. */
async function operator<T>(method: string, path: string, body?: unknown) {
  return call<T>(sys.url, method, `/admin/v1/orgs/${orgId}${path}`, {
    token: OPERATOR_TOKEN,
    ...(body === undefined ? {} : { body }),
  });
}

type Locations = { items: { id: string; name: string; address: string; timezone: string }[] };

test.serial(
  'an admin creates, renames and deletes a location, and moves its station out first',
  async (t) => {
    const page = await signedIn(ADMIN, '/');
    await page.getByRole('link', { name: 'Locations' }).click();
    await page.getByRole('heading', { name: 'Locations', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Create location' }).click();
    await page.getByLabel('Name').fill('Warehouse');
    await page.getByLabel('Address').fill('1 Dock Road');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    await page.getByRole('button', { name: 'Create location' }).click();

    const row = page.getByRole('row', { name: /Warehouse/ });
    await row.waitFor();
    t.is(await row.locator('td[data-label="Address"]').textContent(), '1 Dock Road');
    t.is(await row.locator('td[data-label="Time zone"]').textContent(), 'Europe/Berlin');
    t.is(await row.locator('td[data-label="Stations"]').textContent(), '0');
    const created = (await operator<Locations>('GET', '/locations')).body.items;
    t.like(created[0], { name: 'Warehouse', address: '1 Dock Road', timezone: 'Europe/Berlin' });
    const id = created[0]?.id as string;

    // A time zone Spool does not know: the form says so and stays.
    await row.getByRole('button', { name: 'Edit' }).click();
    const form = page.getByRole('region', { name: 'Edit location Warehouse' });
    await form.getByLabel('Time zone').fill('Mars/Olympus');
    await form.getByRole('button', { name: 'Save location' }).click();
    await form
      .getByRole('alert')
      .getByText(/timezone must be an IANA time zone/)
      .waitFor();
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await form.getByLabel('Name').fill('Central warehouse');
    await form.getByRole('button', { name: 'Save location' }).click();
    await form.waitFor({ state: 'detached' });
    const renamed = page.getByRole('row', { name: /Central warehouse/ });
    await renamed.waitFor();
    const got = await operator<{ location: { name: string } }>('GET', `/locations/${id}`);
    t.is(got.body.location.name, 'Central warehouse');

    // A station in it (made elsewhere) is counted, and keeps the location from deletion.
    await createStation(sys.url, orgId, { name: 'Dock desk', location_id: id });
    await renamed.locator('td[data-label="Stations"]', { hasText: '1' }).waitFor();
    await renamed.getByRole('button', { name: 'Delete location' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the location Central warehouse?' });
    t.regex((await dialog.textContent()) ?? '', /1 station is in it/);
    await dialog.getByRole('button', { name: 'Delete location' }).click();
    await page
      .getByRole('alert')
      .getByText('1 station is in this location ("Dock desk"): move or delete it first')
      .waitFor();
    t.is((await operator('GET', `/locations/${id}`)).status, 200);

    // Moved out of any location on the Stations page, the station no longer holds it.
    await page.getByRole('link', { name: 'Stations' }).click();
    const station = page.getByRole('row', { name: /Dock desk/ });
    await station.locator('td[data-label="Location"]', { hasText: 'Central warehouse' }).waitFor();
    await station.getByRole('button', { name: 'Move' }).click();
    const move = page.getByRole('region', { name: 'Move station Dock desk' });
    await move.getByLabel('To location').selectOption({ label: 'None' });
    await move.getByRole('button', { name: 'Move station' }).click();
    await move.waitFor({ state: 'detached' });
    await station.locator('td[data-label="Location"]', { hasText: '—' }).waitFor();

    await page.getByRole('link', { name: 'Locations' }).click();
    await renamed.locator('td[data-label="Stations"]', { hasText: '0' }).waitFor();
    await renamed.getByRole('button', { name: 'Delete location' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete location' }).click();
    await renamed.waitFor({ state: 'detached' });
    t.is((await operator('GET', `/locations/${id}`)).status, 404);
  },
);

test.serial(
  'the Locations page follows locations and stations changed elsewhere without a reload',
  async (t) => {
    const page = await signedIn(ADMIN, '/locations');
    await page.getByRole('heading', { name: 'Locations', level: 1 }).waitFor();
    const made = await operator<{ location: { id: string } }>('POST', '/locations', {
      name: 'Made elsewhere',
      timezone: 'America/Chicago',
    });
    t.is(made.status, 201);
    const id = made.body.location.id;
    const row = page.getByRole('row', { name: /Made elsewhere/ });
    await row.getByText('America/Chicago').waitFor();

    const station = await createStation(sys.url, orgId, { name: 'Elsewhere desk' });
    const moved = await operator('PATCH', `/stations/${station.id}`, { location_id: id });
    t.is(moved.status, 200);
    await row.locator('td[data-label="Stations"]', { hasText: '1' }).waitFor();
    t.is((await operator('DELETE', `/stations/${station.id}`)).status, 204);
    await row.locator('td[data-label="Stations"]', { hasText: '0' }).waitFor();

    const renamed = await operator('PATCH', `/locations/${id}`, { name: 'Renamed elsewhere' });
    t.is(renamed.status, 200);
    const again = page.getByRole('row', { name: /Renamed elsewhere/ });
    await again.waitFor();
    t.is((await operator('DELETE', `/locations/${id}`)).status, 204);
    await again.waitFor({ state: 'detached' });
  },
);

test.serial('a viewer sees the locations and nothing to change them', async (t) => {
  const made = await operator('POST', '/locations', { name: 'Viewed hall' });
  t.is(made.status, 201);
  await createStation(sys.url, orgId, { name: 'Viewed desk' });
  const page = await signedIn(VIEWER, '/locations');
  await page.getByRole('row', { name: /Viewed hall/ }).waitFor();
  t.is(await page.getByRole('button', { name: 'Create location' }).count(), 0);
  t.is(await page.getByRole('button', { name: 'Edit' }).count(), 0);
  t.is(await page.getByRole('button', { name: 'Delete location' }).count(), 0);
  t.is(await page.getByRole('heading', { name: 'New location' }).count(), 0);

  await page.getByRole('link', { name: 'Stations' }).click();
  await page.getByRole('row', { name: /Viewed desk/ }).waitFor();
  t.is(await page.getByRole('button', { name: 'Move' }).count(), 0);
});

test.serial('on a phone, the Locations page and its form are in sight', async (t) => {
  await operator('POST', '/locations', { name: 'Phone hall', timezone: 'Pacific/Auckland' });
  const phone = await signedIn(ADMIN, '/locations', 390, 844);
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
  await phone.getByRole('button', { name: 'Delete location' }).first().waitFor();
  t.deepEqual(await outside(), [], 'the list');
  await phone.getByRole('button', { name: 'Create location' }).click();
  await phone.getByLabel('Time zone').waitFor();
  t.deepEqual(await outside(), [], 'the form');
  t.true(await fits(), 'the Locations page fits a phone');
});
