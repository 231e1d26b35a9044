/**
 * The console's pages in a real browser, as a person uses them: destructive actions ask first, a
 * printer whose station is offline is not ready, the jobs list's URL says what it shows, and an
 * invitation asks someone who has an account for nothing Spool would ignore; on a phone, every
 * action is in sight.
 * Chromium through playwright-core against a real Spool whose station `desk` prints to a folder,
 * beside a station that went offline with its printer `annex` last reported ready.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { invite, member, PASSWORD, tokenOf } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { startReceiver } from './helpers/receiver.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
} from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

const OWNER = 'owner@example.com';

let org: PrintingOrg;
let browser: Browser;
/** The station that went offline, and its printer `annex`. */
let offline: { stationId: string; printerId: string };
const contexts: BrowserContext[] = [];

test.before(async () => {
  [org, browser] = await Promise.all([startPrintingOrg(), launchChromium()]);
  await member(org.sys.url, org.orgId, 'owner', OWNER);
  const station = await createStation(org.sys.url, org.orgId, { name: 'Annex' });
  const link = await connectLink(org.sys.linkAddress, station.token, [printer('annex')]);
  const listed = await eventually(
    () => printersOf(),
    (printers) => printers.some((p) => p.name === 'annex' && p.station_online),
  );
  link.close();
  await eventually(
    () => printersOf(),
    (printers) => printers.some((p) => p.name === 'annex' && !p.station_online),
  );
  offline = {
    stationId: station.id,
    printerId: listed.find((p) => p.name === 'annex')?.id as string,
  };
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await org?.stop();
});

/** The first page of the organization's printers, or of one station's. */
async function printersOf(stationId?: string) {
  const query = stationId ? `?station_id=${stationId}` : '';
  const res = await call<{ printers: { id: string; name: string; station_online: boolean }[] }>(
    org.sys.url,
    'GET',
    `/v1/orgs/${org.orgId}/printers${query}`,
    { token: org.key },
  );
  return res.body.printers;
}

/** A job for `annex`, whose station is offline: it stays queued. */
async function queuedJob(title: string, reference = ''): Promise<string> {
  const res = await call<{ job: { id: string } }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs`,
    {
      token: org.key,
      body: {
        printer_id: offline.printerId,
        title,
        ...(reference ? { reference } : {}),
        content: { type: 'text', data: title },
      },
    },
  );
  if (res.status !== 201) throw new Error(`job: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.job.id;
}

/** A page of a browser of its own. */
async function newPage(width = 1280, height = 800): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** The owner, signed in, on `path` of the console. */
async function ownerPage(path = '/', width = 1280, height = 800): Promise<Page> {
  const page = await newPage(width, height);
  await page.goto(`${org.sys.url}/console/`);
  await page.getByLabel('Email').fill(OWNER);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  if (path !== '/') await page.goto(`${org.sys.url}/console${path}`);
  return page;
}

/** Opens the confirmation with `open`, then leaves it with Escape and with its dismiss button. */
async function dismissTwice(page: Page, open: () => Promise<void>, dismiss = 'Cancel') {
  await open();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  await open();
  await dialog.getByRole('button', { name: dismiss, exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
}

test.serial(
  'destructive actions ask first, and Escape or Cancel leave things as they were',
  async (t) => {
    // Revoke an API key.
    const key = await createKey(org.sys.url, org.orgId, { name: 'shop backend', scopes: [] });
    const page = await ownerPage('/keys');
    const row = page.getByRole('row', { name: /shop backend/ });
    const revoke = () => row.getByRole('button', { name: 'Revoke' }).click();
    await revoke();
    const dialog = page.getByRole('dialog', { name: 'Revoke the key shop backend?' });
    await dialog.waitFor();
    t.regex((await dialog.textContent()) ?? '', /refuses every request made with it/);
    t.is(
      await page.evaluate('document.activeElement.textContent'),
      'Cancel',
      'the harmless answer has the focus',
    );
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await dismissTwice(page, revoke);
    t.is((await call(org.sys.url, 'GET', '/v1/key', { token: key.secret })).status, 200);
    await revoke();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await row.getByText('revoked').waitFor();
    t.is((await call(org.sys.url, 'GET', '/v1/key', { token: key.secret })).status, 401);

    // Rotate an endpoint's secret, which is not the page's primary button, and delete the endpoint.
    const created = await call<{ endpoint: { id: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/webhooks`,
      { token: org.key, body: { url: 'http://127.0.0.1:9/spool', events: ['job.printed'] } },
    );
    t.is(created.status, 201);
    await page.goto(`${org.sys.url}/console/webhooks/${created.body.endpoint.id}`);
    const rotate = page.getByRole('button', { name: 'Rotate secret' });
    await rotate.waitFor();
    // A plain button is drawn as the primary action; Rotate secret must not look like one.
    const [rotateColor, primaryColor] = await page.evaluate<string[]>(`(() => {
      const rotate = [...document.querySelectorAll('button')].find(
        (b) => b.textContent === 'Rotate secret',
      );
      const plain = document.createElement('button');
      document.body.append(plain);
      const colors = [getComputedStyle(rotate).backgroundColor, getComputedStyle(plain).backgroundColor];
      plain.remove();
      return colors;
    })()`);
    t.not(rotateColor, primaryColor, 'Rotate secret is not styled as the primary action');
    await dismissTwice(page, () => rotate.click());
    t.is(await page.getByLabel('Secret', { exact: true }).count(), 0, 'no new secret was made');
    await rotate.click();
    await page
      .getByRole('dialog', { name: /Rotate the signing secret/ })
      .getByRole('button', { name: 'Rotate secret' })
      .click();
    t.regex((await page.getByLabel('Secret', { exact: true }).textContent()) ?? '', /^whsec_/);
    const endpoint = `/v1/orgs/${org.orgId}/webhooks/${created.body.endpoint.id}`;
    // Disable it: its pending deliveries would end failed.
    const disable = () => page.getByRole('button', { name: 'Disable', exact: true }).click();
    await dismissTwice(page, disable);
    const enabled = async () =>
      (
        await call<{ endpoint: { enabled: boolean } }>(org.sys.url, 'GET', endpoint, {
          token: org.key,
        })
      ).body.endpoint.enabled;
    t.true(await enabled(), 'dismissed: still enabled');
    await disable();
    await page.getByRole('dialog').getByRole('button', { name: 'Disable endpoint' }).click();
    await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
    t.false(await enabled());
    const remove = () => page.getByRole('button', { name: 'Delete endpoint' }).click();
    await dismissTwice(page, remove);
    t.is((await call(org.sys.url, 'GET', endpoint, { token: org.key })).status, 200);
    await remove();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    t.is((await call(org.sys.url, 'GET', endpoint, { token: org.key })).status, 404);

    // Remove a member.
    const grace = await member(org.sys.url, org.orgId, 'viewer', 'grace@example.com');
    await page.goto(`${org.sys.url}/console/people`);
    const removeGrace = () => page.getByRole('button', { name: 'Remove viewer person' }).click();
    await dismissTwice(page, removeGrace);
    t.is((await grace.call('GET', `/console/v1/orgs/${org.orgId}/keys`)).status, 200);
    await removeGrace();
    await page
      .getByRole('dialog', { name: /Remove viewer person from/ })
      .getByRole('button', { name: 'Remove member' })
      .click();
    await page.getByRole('row', { name: /grace@example\.com/ }).waitFor({ state: 'detached' });
    t.is((await grace.call('GET', `/console/v1/orgs/${org.orgId}/keys`)).status, 404);

    // Cancel a job: the dialog does not offer "Cancel" beside "Cancel job".
    const jobId = await queuedJob('Packing slip 7');
    await page.goto(`${org.sys.url}/console/jobs/${jobId}`);
    const cancel = () => page.getByRole('button', { name: 'Cancel job' }).click();
    await dismissTwice(page, cancel, 'Keep job');
    const jobPath = `/v1/orgs/${org.orgId}/jobs/${jobId}`;
    const status = async () =>
      (await call<{ job: { status: string } }>(org.sys.url, 'GET', jobPath, { token: org.key }))
        .body.job.status;
    t.is(await status(), 'queued');
    await cancel();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel job' }).click();
    await page.locator('.details').getByText('cancelled').waitFor();
    t.is(await status(), 'cancelled');

    // Delete a printer.
    const spare = await createStation(org.sys.url, org.orgId, { name: 'Spare room' });
    const spareLink = await connectLink(org.sys.linkAddress, spare.token, [printer('spare')]);
    await eventually(
      () => printersOf(),
      (printers) => printers.some((p) => p.name === 'spare'),
    );
    spareLink.close();
    await page.goto(`${org.sys.url}/console/printers`);
    const deleteSpare = () =>
      page
        .getByRole('row', { name: /spare/ })
        .getByRole('button', { name: 'Delete printer' })
        .click();
    await dismissTwice(page, deleteSpare);
    t.true((await printersOf()).some((p) => p.name === 'spare'));
    await deleteSpare();
    await page
      .getByRole('dialog', { name: 'Delete the printer spare?' })
      .getByRole('button', { name: 'Delete printer' })
      .click();
    await page.getByRole('row', { name: /spare/ }).waitFor({ state: 'detached' });
    t.false((await printersOf()).some((p) => p.name === 'spare'));
  },
);

test.serial('the keys page says when each key was last used, or never', async (t) => {
  const used = await createKey(org.sys.url, org.orgId, { name: 'till app', scopes: [] });
  await createKey(org.sys.url, org.orgId, { name: 'old script', scopes: [] });
  t.is((await call(org.sys.url, 'GET', '/v1/key', { token: used.secret })).status, 200);
  await org.sys.gateway.gateway.cache.uses?.flush();
  const page = await ownerPage('/keys');
  const lastUsed = (name: RegExp) =>
    page.getByRole('row', { name }).locator('td[data-label="Last used"]').textContent();
  await page.getByRole('row', { name: /till app/ }).waitFor();
  t.not(await lastUsed(/till app/), 'never');
  t.is(await lastUsed(/old script/), 'never');
});

test.serial('a station whose token was revoked says so beside its status', async (t) => {
  const station = await createStation(org.sys.url, org.orgId, { name: 'Lobby kiosk' });
  const revoked = await call(
    org.sys.url,
    'DELETE',
    `/admin/v1/orgs/${org.orgId}/stations/${station.id}/token`,
    { token: OPERATOR_TOKEN },
  );
  t.is(revoked.status, 204);
  const page = await ownerPage('/stations');
  const row = page.getByRole('row', { name: /Lobby kiosk/ });
  await row.getByText('token revoked').waitFor();
  // A station that is merely offline (its agent went away) has no such tag.
  t.is(await page.getByRole('row', { name: /Annex/ }).getByText('token revoked').count(), 0);
});

test.serial(
  'Diagnose on a station shows the versions, printers and log lines of its agent',
  async (t) => {
    const page = await ownerPage('/stations');
    const row = page.getByRole('row', { name: /Front desk/ });
    await row.getByRole('button', { name: 'Diagnose' }).click();
    const report = page.getByRole('region', { name: 'Diagnosis of Front desk' });
    await report.getByText(/INFO station agent started/).waitFor();
    t.is(await report.getByRole('row', { name: /^desk file:/ }).count(), 1);
    t.regex((await report.locator('dl').textContent()) ?? '', /agent\d+\.\d+\.\d+/);
    // A station whose agent is not linked cannot be asked.
    t.true(
      await page
        .getByRole('row', { name: /Annex/ })
        .getByRole('button', { name: 'Diagnose' })
        .isDisabled(),
    );
  },
);

test.serial('a printer whose station is offline reads as unreachable, not ready', async (t) => {
  const printers = await call<{
    printers: { name: string; status: string; station_online: boolean }[];
  }>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/printers`, { token: org.key });
  const annex = printers.body.printers.find((p) => p.name === 'annex');
  t.like(annex, { status: 'ready', station_online: false }, 'its last report was ready');
  const ready = printers.body.printers.filter((p) => p.station_online && p.status === 'ready');
  const away = printers.body.printers.filter((p) => !p.station_online && p.status !== 'removed');

  const page = await ownerPage();
  const card = page.getByRole('region', { name: 'Printers by status' });
  const count = (status: string) =>
    card
      .locator('.counts > div', { has: page.locator('dt', { hasText: new RegExp(`^${status}$`) }) })
      .locator('dd')
      .textContent();
  await card.getByText('unreachable').waitFor();
  t.is(await count('ready'), String(ready.length));
  t.is(await count('unreachable'), String(away.length));
  // The console API's overview counts them so for any client of it.
  const overview = await page.request.get(`${org.sys.url}/console/v1/orgs/${org.orgId}/overview`);
  t.like((await overview.json()).printers, { ready: ready.length, unreachable: away.length });

  await page.goto(`${org.sys.url}/console/printers`);
  const row = page.getByRole('row', { name: /annex/ });
  await row.getByText('unreachable', { exact: true }).waitFor();
  t.is(await row.getByText('ready', { exact: true }).count(), 0);
  await row.getByText(/its station is offline; it last reported ready/).waitFor();
  await page.getByRole('row', { name: /desk/ }).getByText('ready', { exact: true }).waitFor();
});

test.serial(
  'the jobs list keeps its filters and page in its URL: reload, Back and a shared link',
  async (t) => {
    // Thirty queued jobs with one reference: 25 on the first page, 5 on the second.
    for (let i = 1; i <= 30; i++) {
      await queuedJob(`Batch job ${String(i).padStart(2, '0')}`, 'batch-7');
    }
    const page = await ownerPage('/jobs');
    /** The titles the list shows, once it shows `n` jobs. */
    const titles = async (p: Page, n: number) => {
      await p
        .locator('tr[data-job-id]')
        .nth(n - 1)
        .waitFor();
      await p.locator('tr[data-job-id]').nth(n).waitFor({ state: 'detached' });
      return (await p.locator('tr[data-job-id] .job-link span:first-child').allTextContents())
        .sort()
        .join();
    };
    await page.getByRole('button', { name: /^queued/ }).click();
    await page.getByText('More filters').click();
    await page.getByLabel('Reference').fill('batch-7');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/reference=batch-7/);
    const first = await titles(page, 25);
    t.true(first.split(',').every((title) => title.startsWith('Batch job')));
    const firstPage = page.url();
    t.regex(firstPage, /status=queued/);

    await page.getByRole('button', { name: 'Next page' }).click();
    await page.waitForURL(/cursor=/);
    const second = await titles(page, 5);
    t.not(second, first);
    const secondPage = page.url();

    // Reload: the same page, with the same filters shown as chosen.
    await page.reload();
    t.is(await titles(page, 5), second);
    t.is(await page.getByRole('button', { name: /^queued/ }).getAttribute('aria-pressed'), 'true');
    t.is(await page.getByLabel('Reference').inputValue(), 'batch-7');
    t.true(await page.getByRole('button', { name: 'Previous page' }).isEnabled());

    // Back returns to the first page, then to the list before the reference filter.
    await page.goBack();
    t.is(await titles(page, 25), first);
    t.is(page.url(), firstPage);
    await page.goBack();
    await page.waitForURL((url) => !url.search.includes('reference'));
    // The form follows the URL as the page renders again.
    await eventually(
      () => page.getByLabel('Reference').inputValue(),
      (value) => value === '',
    );
    t.is(await page.getByRole('button', { name: /^queued/ }).getAttribute('aria-pressed'), 'true');
    await page.goForward();
    await page.goForward();
    t.is(await titles(page, 5), second);
    await page.getByRole('button', { name: 'Previous page' }).click();
    t.is(await titles(page, 25), first);
    t.is(page.url(), firstPage);

    // A job's page leads back to the list as it was.
    await page.locator('tr[data-job-id] .job-link').first().click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await page.getByRole('link', { name: '← Back to the list' }).click();
    t.is(await titles(page, 25), first);
    t.is(page.url(), firstPage);

    // The second page's link, opened by someone else, shows that page; First page leads back.
    const other = await ownerPage();
    await other.goto(secondPage);
    t.is(await titles(other, 5), second);
    await other.getByRole('button', { name: 'First page' }).click();
    t.is(await titles(other, 25), first);
    t.is(other.url(), firstPage);
  },
);

test.serial(
  'the printers list and an endpoint’s delivery log keep their page in the URL, as the jobs list does',
  async (t) => {
    // 105 printers more on one station: the list shows 100 a page.
    const station = await createStation(org.sys.url, org.orgId, { name: 'Racks' });
    const names = Array.from({ length: 105 }, (_, i) => `rack-${String(i + 1).padStart(3, '0')}`);
    const link = await connectLink(
      org.sys.linkAddress,
      station.token,
      names.map((n) => printer(n)),
    );
    t.teardown(() => link.close());
    // The link's printers are recorded as it opens.
    const page = await ownerPage('/printers');
    const rows = page.locator('tbody tr');
    await rows.nth(99).waitFor();
    const firstPage = page.url();
    const firstNames = (await rows.allTextContents()).join();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.waitForURL(/cursor=/);
    await eventually(
      () => rows.count(),
      (n) => n > 0 && n < 100,
    );
    const second = (await rows.allTextContents()).join();
    t.not(second, firstNames);
    await page.reload();
    await eventually(
      () => rows.allTextContents(),
      (texts) => texts.join() === second,
    );
    await page.goBack();
    await page.waitForURL(firstPage);
    await rows.nth(99).waitFor();

    // An endpoint with twelve test deliveries: ten a page on its own page, filtered by state.
    const receiver = await startReceiver();
    t.teardown(() => receiver.close());
    const created = await call<{ endpoint: { id: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/webhooks`,
      { token: org.key, body: { url: `${receiver.url}/hook`, events: ['job.printed'] } },
    );
    const endpoint = `/v1/orgs/${org.orgId}/webhooks/${created.body.endpoint.id}`;
    for (let i = 0; i < 12; i++) {
      t.is((await call(org.sys.url, 'POST', `${endpoint}/test`, { token: org.key })).status, 202);
    }
    await receiver.until((r) => r.length >= 12);
    const log = await ownerPage(`/webhooks/${created.body.endpoint.id}`);
    const deliveries = log.locator('.deliveries > li');
    await deliveries.nth(9).waitFor();
    await log.getByRole('button', { name: 'Next page' }).click();
    await log.waitForURL(/cursor=/);
    await eventually(
      () => deliveries.count(),
      (n) => n === 2,
    );
    await log.reload();
    await eventually(
      () => deliveries.count(),
      (n) => n === 2,
    );
    t.true(await log.getByRole('button', { name: 'Previous page' }).isEnabled());
    await log.getByLabel('State').selectOption('failed');
    await log.waitForURL((url) => url.search === '?state=failed');
    await log.getByText('No deliveries yet.', { exact: false }).waitFor();
    await log.goBack();
    await eventually(
      () => deliveries.count(),
      (n) => n === 2,
    );
    // A state the log does not know, in a hand-edited link, shows every delivery.
    await log.goto(`${org.sys.url}/console/webhooks/${created.body.endpoint.id}?state=bogus`);
    await deliveries.nth(9).waitFor();
    t.is(await log.getByLabel('State').inputValue(), '');
  },
);

test.serial(
  'a person who has an account is not asked for a display name when invited again',
  async (t) => {
    const beta = await createOrg(org.sys.url, 'Beta Labels');

    // Signed in here already: the page knows them and asks for their password only.
    const page = await ownerPage();
    await page.goto((await invite(org.sys.url, beta, OWNER, 'admin')).url);
    await page.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
    await page.getByText('You are signed in as owner person').waitFor();
    t.is(await page.getByLabel('Display name').count(), 0);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    t.is(await page.getByLabel('Organization').inputValue(), beta, 'the organization just joined');
    await page.getByRole('banner').getByText('owner person').waitFor();

    // Not signed in: they say they have an account, and give its password alone.
    await member(org.sys.url, org.orgId, 'viewer', 'vic@example.com');
    const vic = await newPage();
    await vic.goto((await invite(org.sys.url, beta, 'vic@example.com', 'viewer')).url);
    await vic.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
    await vic.getByLabel('Yes, I have an account').check();
    t.is(await vic.getByLabel('Display name').count(), 0);
    await vic.getByLabel('Password').fill(PASSWORD);
    await vic.getByRole('button', { name: 'Accept invitation' }).click();
    await vic.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await vic.getByRole('banner').getByText('viewer person').waitFor();

    // Someone new who says otherwise is asked for the name after all.
    const newcomer = await newPage();
    await newcomer.goto((await invite(org.sys.url, beta, 'nia@example.com', 'viewer')).url);
    await newcomer.getByLabel('Yes, I have an account').check();
    await newcomer.getByLabel('Password').fill('a new password of mine');
    await newcomer.getByRole('button', { name: 'Accept invitation' }).click();
    await newcomer.getByText('Spool has no account with this email yet').waitFor();
    await newcomer.getByLabel('Display name').fill('Nia Newcomer');
    await newcomer.getByRole('button', { name: 'Accept invitation' }).click();
    await newcomer.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await newcomer.getByRole('banner').getByText('Nia Newcomer').waitFor();
  },
);

test.serial(
  'on a phone, every action of every page is on screen without scrolling sideways',
  async (t) => {
    const endpoint = await call<{ endpoint: { id: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/webhooks`,
      { token: org.key, body: { url: 'http://127.0.0.1:9/phone', events: ['job.printed'] } },
    );
    const jobId = await queuedJob('Phone job', 'phone');
    await member(org.sys.url, org.orgId, 'developer', 'dev@example.com');
    const phone = await ownerPage('/', 390, 844);
    /** The controls and links of the page's main part that reach past either side. */
    const outside = () =>
      phone.evaluate<
        string[]
      >(`[...document.querySelectorAll('main :is(button, select, input, textarea, a)')]
      .filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && (r.left < 0 || r.right > window.innerWidth);
      })
      .map((e) => (e.getAttribute('aria-label') || e.textContent).trim())`);
    // Each page, with what shows that its list has come.
    const pages: [string, string][] = [
      ['/keys', 'Revoke'],
      ['/printers', 'Delete printer'],
      ['/stations', 'Annex'],
      ['/people', 'dev@example.com'],
      // Filtered to it: the list's order among the other tests' jobs is not this test's to know.
      ['/jobs?reference=phone', 'Phone job'],
      [`/jobs/${jobId}`, 'Cancel job'],
      ['/webhooks', 'Delete endpoint'],
      [`/webhooks/${endpoint.body.endpoint.id}`, 'Rotate secret'],
    ];
    for (const [path, shown] of pages) {
      await phone.goto(`${org.sys.url}/console${path}`);
      await phone.getByRole('main').getByText(shown).first().waitFor();
      t.deepEqual(await outside(), [], path);
      t.true(
        await phone.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'),
        `${path} fits a phone`,
      );
    }
  },
);

test.serial(
  'a pending invitation can be withdrawn, after a confirmation, and its link stops working',
  async (t) => {
    const { url } = await invite(org.sys.url, org.orgId, 'mistake@example.com', 'viewer');
    const link = `/console/v1/invitations/${tokenOf(url)}`;
    t.is((await call(org.sys.url, 'GET', link)).status, 200);
    const page = await ownerPage('/people');
    const pending = page.getByRole('table', { name: 'Pending invitations' });
    const row = pending.getByRole('row', { name: /mistake@example\.com/ });
    const withdraw = () =>
      row.getByRole('button', { name: 'Withdraw the invitation of mistake@example.com' }).click();
    await dismissTwice(page, withdraw);
    t.is((await call(org.sys.url, 'GET', link)).status, 200, 'dismissed: the link still works');
    await withdraw();
    const dialog = page.getByRole('dialog', {
      name: 'Withdraw the invitation of mistake@example.com?',
    });
    t.regex((await dialog.textContent()) ?? '', /stops working at once/);
    await dialog.getByRole('button', { name: 'Withdraw invitation' }).click();
    await row.waitFor({ state: 'detached' });
    t.is((await call(org.sys.url, 'GET', link)).status, 404);
  },
);

test.serial(
  'a role lowered by an admin shows in a tab already open whose live stream is down, at its next refusal',
  async (t) => {
    const email = 'demoted@example.com';
    const demoted = await member(org.sys.url, org.orgId, 'developer', email);
    const admin = await member(org.sys.url, org.orgId, 'admin');
    const page = await newPage();
    // The stream answers and ends at once, again and again: the browser keeps reconnecting, and no
    // event (the person's own member.updated among them) reaches the tab.
    await page.route('**/v1/orgs/*/stream', (route) =>
      route.fulfill({ status: 200, contentType: 'text/event-stream', body: '' }),
    );
    await page.goto(`${org.sys.url}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('(developer)').waitFor();
    await page.goto(`${org.sys.url}/console/keys`);
    await page.getByRole('button', { name: 'Create key' }).waitFor();

    const changed = await admin.call(
      'PATCH',
      `/console/v1/orgs/${org.orgId}/people/${demoted.personId}`,
      { body: { role: 'viewer' } },
    );
    t.is(changed.status, 200);
    // The tab still offers what a developer may do; the server refuses it, and the tab catches up.
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('(viewer)').waitFor();
    t.is(await page.getByRole('button', { name: 'Create key' }).count(), 0);
  },
);

test.serial(
  'signing out while Spool cannot be reached says the person is still signed in',
  async (t) => {
    const page = await ownerPage();
    await page.route('**/console/v1/sign-out', (route) => route.abort());
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText(/You are still signed in: Spool could not be reached/).waitFor();
    t.is(await page.getByRole('button', { name: 'Sign in' }).count(), 0);
    // The session still works, as the page says; once Spool answers, signing out ends it.
    t.is(await page.evaluate(async () => (await fetch('/console/v1/session')).status), 200);
    await page.unroute('**/console/v1/sign-out');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    t.is(await page.evaluate(async () => (await fetch('/console/v1/session')).status), 401);
  },
);

test.serial(
  'a tab whose live stream is refused reads the session again: signed out in another tab, it shows the sign-in page',
  async (t) => {
    const first = await ownerPage('/jobs');
    const second = await first.context().newPage();
    await second.goto(`${org.sys.url}/console/jobs`);
    await second.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    await second.getByText('Live', { exact: true }).waitFor();

    await first.getByRole('button', { name: 'Sign out' }).click();
    await first.getByRole('button', { name: 'Sign in' }).waitFor();
    // Nothing is clicked in the second tab: its stream ends, is refused, and it follows.
    await second.getByRole('button', { name: 'Sign in' }).waitFor({ timeout: 20_000 });
    await second.getByText('Your session ended; sign in again.').waitFor();
    t.pass();
  },
);

test.serial(
  'a person removed from the organization while its jobs page is open is shown that, not the old list',
  async (t) => {
    const email = 'removed@example.com';
    const removed = await member(org.sys.url, org.orgId, 'viewer', email);
    const admin = await member(org.sys.url, org.orgId, 'admin');
    await queuedJob('Seen by the removed viewer', 'removed-viewer');
    const page = await newPage();
    await page.goto(`${org.sys.url}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('(viewer)').waitFor();
    // Filtered to it: the list's first page among the other tests' jobs is not this test's to know.
    await page.goto(`${org.sys.url}/console/jobs?reference=removed-viewer`);
    await page.getByText('Seen by the removed viewer').first().waitFor();
    await page.getByText('Live', { exact: true }).waitFor();

    const gone = await admin.call(
      'DELETE',
      `/console/v1/orgs/${org.orgId}/people/${removed.personId}`,
    );
    t.is(gone.status, 204);
    await page.getByRole('heading', { name: 'No organization' }).waitFor({ timeout: 20_000 });
    t.is(await page.getByText('Seen by the removed viewer').count(), 0);
  },
);

test.serial(
  'on a phone, a delivery’s attempts are cards, each headed with its number, its error in sight',
  async (t) => {
    const created = await call<{ endpoint: { id: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/webhooks`,
      { token: org.key, body: { url: 'http://127.0.0.1:9/refused', events: ['job.created'] } },
    );
    const endpointId = created.body.endpoint.id;
    await queuedJob('Refused delivery');
    const hooks = webhookAdmin(org.sys.url, OPERATOR_TOKEN, org.orgId);
    const [delivery] = await eventually(
      () => hooks.deliveries(endpointId),
      (items) => items[0]?.attempts[0]?.outcome === 'failed',
    );
    const error = delivery?.attempts[0]?.error ?? '';
    t.not(error, '');

    const phone = await ownerPage(`/webhooks/${endpointId}`, 390, 844);
    const attempts = phone.getByRole('table', { name: /^Attempts of job\.created/ });
    const cell = attempts.getByRole('cell', { name: error });
    await cell.waitFor();
    const box = await cell.boundingBox();
    t.truthy(box);
    t.true((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? 0) <= 390, JSON.stringify(box));
    await attempts.getByRole('rowheader', { name: 'Attempt 1' }).waitFor();
    t.true(await attempts.getByText('Attempt 1').isVisible());
  },
);

test.serial(
  'an invitation refused after another was made leaves only its error, not the earlier link',
  async (t) => {
    const page = await ownerPage('/people');
    await page.getByRole('heading', { name: 'People', level: 1 }).waitFor();
    await page.getByLabel('Email').fill('linked@example.com');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByLabel('Invitation link').waitFor();
    // The owner is a member already: refused, 409.
    await page.getByLabel('Email').fill(OWNER);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /already/ })
      .waitFor();
    t.is(await page.getByLabel('Invitation link').count(), 0);
    t.is(await page.getByText('linked@example.com', { exact: true }).count(), 1, 'listed pending');
  },
);

test.serial('a job whose printer was deleted names it as a deleted printer', async (t) => {
  const station = await createStation(org.sys.url, org.orgId, { name: 'Gone room' });
  const link = await connectLink(org.sys.linkAddress, station.token, [printer('gone')]);
  // An earlier test filled the first page with 105 printers: this station's alone are read.
  const listed = await eventually(
    () => printersOf(station.id),
    (printers) => printers.some((p) => p.name === 'gone'),
  );
  link.close();
  const printerId = listed.find((p) => p.name === 'gone')?.id as string;
  const created = await call<{ job: { id: string } }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs`,
    {
      token: org.key,
      body: {
        printer_id: printerId,
        title: 'Before it went',
        content: { type: 'text', data: 'x' },
      },
    },
  );
  t.is(created.status, 201);
  const admin = await member(org.sys.url, org.orgId, 'admin');
  const deleted = await admin.call('DELETE', `/console/v1/orgs/${org.orgId}/printers/${printerId}`);
  t.is(deleted.status, 204);

  const page = await ownerPage(`/jobs/${created.body.job.id}`);
  await page
    .getByText(`deleted printer ${printerId.slice(0, 8)}`)
    .first()
    .waitFor();
  await page.goto(`${org.sys.url}/console/jobs?printer_id=${printerId}`);
  await page
    .getByRole('main')
    .getByText(`deleted printer ${printerId.slice(0, 8)}`)
    .first()
    .waitFor();
});
