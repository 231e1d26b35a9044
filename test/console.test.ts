/**
 * The console in a real browser (Debian's Chromium through playwright-core), against a real
 * Spool: the gateway serving the built app, the services, and a `spool agent` printing to a file.
 * Controls are found by the accessible names of DESIGN §5, as any outside test finds them.
 * `npm run screenshots` runs this file with SPOOL_SCREENSHOTS=1 to refresh docs/console/*.png.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import Koa from 'koa';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { consoleStatic } from '../gateway/console-static.js';
import { launchChromium, screenshot } from './helpers/browser.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { call, eventually, OPERATOR_TOKEN } from './helpers/system.js';

const OWNER = { email: 'ada@example.com', name: 'Ada Lovelace', password: 'correct horse battery' };
const VIEWER = { email: 'vic@example.com', name: 'Vic Viewer', password: 'viewer password 1' };

let org: PrintingOrg;
let browser: Browser;
let receiver: Receiver;
const contexts: BrowserContext[] = [];

test.before(async () => {
  [org, browser, receiver] = await Promise.all([
    startPrintingOrg(),
    launchChromium(),
    startReceiver(),
  ]);
});

test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await receiver?.close();
  await org?.stop();
});

async function newPage(width = 1280, height = 800): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** The operator's invitation, as `spool admin invite` prints it. */
async function invite(email: string, role: string): Promise<string> {
  const res = await call<{ invitation: { email: string; role: string }; url: string }>(
    org.sys.url,
    'POST',
    `/admin/v1/orgs/${org.orgId}/invitations`,
    { token: OPERATOR_TOKEN, body: { email, role } },
  );
  if (res.status !== 201) throw new Error(`invitation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.url;
}

async function accept(page: Page, url: string, who: { name: string; password: string }) {
  await page.goto(url);
  await page.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
  await page.getByLabel('Display name').fill(who.name);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Accept invitation' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

async function go(page: Page, link: string, heading = link): Promise<void> {
  // As an outside test finds it: by its name alone, which no other link on the page contains.
  await page.getByRole('link', { name: link }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

/** What the page's own fetch gets: the status and the error message, with the session's CSRF. */
async function pageCall(page: Page, method: string, path: string, body?: unknown) {
  return page.evaluate(
    async ({ method, path, body }) => {
      const session = await fetch('/console/v1/session', { credentials: 'same-origin' });
      const csrf = session.ok ? ((await session.json()) as { csrf_token: string }).csrf_token : '';
      const res = await fetch(path, {
        method,
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: body === undefined ? null : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, text };
    },
    { method, path, body },
  );
}

test.serial('the gateway serves the built app at /console/ with a strict policy', async (t) => {
  const page = await fetch(`${org.sys.url}/console/`);
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /^text\/html/);
  t.is(page.headers.get('cache-control'), 'no-cache');
  const csp = page.headers.get('content-security-policy') ?? '';
  t.regex(csp, /default-src 'self'/);
  t.regex(csp, /script-src 'self';/);
  t.notRegex(csp, /unsafe/);
  const html = await page.text();
  const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  t.truthy(script, html);

  const asset = await fetch(`${org.sys.url}${script}`);
  t.is(asset.status, 200);
  t.regex(asset.headers.get('content-type') ?? '', /^text\/javascript/);
  t.is(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.true((await asset.text()).length > 1000);

  // The app's own paths answer index.html; its router shows the page.
  const deep = await fetch(`${org.sys.url}/console/jobs/123`);
  t.is(deep.status, 200);
  t.is(await deep.text(), html);
  const missing = await fetch(`${org.sys.url}/console/assets/nothing-here.js`);
  t.is(missing.status, 404);
  t.is(((await missing.json()) as { error: { code: string } }).error.code, 'not_found');
  const traversal = await fetch(`${org.sys.url}/console/assets/..%2f..%2fpackage.json`);
  t.is(traversal.status, 404);
  // The console's API is not the app.
  const session = await fetch(`${org.sys.url}/console/v1/session`);
  t.is(session.status, 401);
  const bare = await fetch(`${org.sys.url}/console`, { redirect: 'manual' });
  t.is(bare.status, 308);
  t.is(bare.headers.get('location'), '/console/');
});

test.serial('without a build, /console/ says how to make one', async (t) => {
  const empty = await mkdtemp(join(tmpdir(), 'spool-console-'));
  t.teardown(() => rm(empty, { recursive: true, force: true }));
  const app = new Koa();
  app.use(consoleStatic(empty));
  const server = createServer(app.callback()).listen(0, '127.0.0.1');
  t.teardown(() => server.close());
  await new Promise((r) => server.once('listening', r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/console/`);
  t.is(res.status, 503);
  t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
  const body = await res.text();
  t.regex(body, /The console is not built/);
  t.regex(body, /npm run build:console/);
});

test('npm ci builds the console, and the image carries the build', async (t) => {
  const root = new URL('../', import.meta.url);
  const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as {
    scripts: Record<string, string>;
  };
  t.is(pkg.scripts.prepare, 'node console/build.mjs');
  t.regex(pkg.scripts['build:console'] ?? '', /^vite build console\b/);
  const docker = await readFile(new URL('Dockerfile', root), 'utf8');
  const copySources = docker.indexOf('COPY console ./console');
  const install = docker.indexOf('RUN npm ci');
  t.true(copySources >= 0 && copySources < install, 'the sources are there when npm ci builds');
  t.true(
    docker.lastIndexOf('COPY --from=build /app/console/dist ./console/dist') >
      docker.lastIndexOf('FROM '),
    'the runtime stage takes the built app',
  );
  const ignored = (await readFile(new URL('.dockerignore', root), 'utf8')).split('\n');
  t.true(ignored.includes('console/dist'), 'a local build does not leak into the image');
});

test.serial(
  'an invited owner signs in, makes a key and an endpoint, and watches a job print',
  async (t) => {
    const page = await newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('response', (res) => {
      // Refusals the test asks for are 401 and 403; anything else missing is a fault of the app.
      if (res.status() === 404 || res.status() >= 500) errors.push(`${res.status()} ${res.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 40[13]/.test(m.text())) errors.push(m.text());
    });

    // The operator invites the owner; the owner opens the link and chooses a name and password.
    const url = await invite(OWNER.email, 'owner');
    t.regex(url, /\/console\/invitation#/);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
    await page.getByText(OWNER.email).waitFor();
    await screenshot(page, 'invitation');
    await page.getByLabel('Display name').fill(OWNER.name);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText(OWNER.name).waitFor();
    for (const name of [
      'Overview',
      'Jobs',
      'Printers',
      'Stations',
      'API keys',
      'Webhooks',
      'People',
      'Settings',
    ]) {
      t.is(await page.getByRole('link', { name, exact: true }).count(), 1, name);
    }
    // The invitation was single-use.
    const again = await call(org.sys.url, 'GET', `/console/v1/invitations/${url.split('#')[1]}`);
    t.is(again.status, 404);

    // An API key: the secret is shown once, and works.
    await go(page, 'API keys');
    await page.getByLabel('Name').fill('shop backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByLabel('Secret').textContent())?.trim() ?? '';
    t.regex(secret, /^svc_test_[0-9A-Za-z]{43}$/);
    await page.getByRole('row', { name: /shop backend/ }).waitFor();
    await screenshot(page, 'keys');
    const me = await call<{ scopes: string[] }>(org.sys.url, 'GET', '/v1/key', { token: secret });
    t.is(me.status, 200);
    t.deepEqual([...me.body.scopes].sort(), ['jobs:read', 'jobs:write']);
    await go(page, 'Overview');
    await go(page, 'API keys');
    t.is(await page.getByLabel('Secret').count(), 0, 'the secret is not shown again');

    // A webhook endpoint: its secret once; a test delivery, resent, in the log with each attempt.
    await go(page, 'Webhooks');
    await page.getByLabel('URL').fill(`${receiver.url}/spool`);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    t.regex((await page.getByLabel('Secret').textContent()) ?? '', /^whsec_/);
    await screenshot(page, 'webhooks');
    // Its actions and delivery log are on the same page.
    await page.getByRole('button', { name: 'Send test' }).click();
    await receiver.until((r) => r.length >= 1);
    await page
      .getByRole('table', { name: /Attempts of ping/ })
      .getByText('succeeded')
      .waitFor();
    await page.getByRole('button', { name: 'Resend' }).first().click();
    await receiver.until((r) => r.length >= 2);
    await page
      .getByRole('table', { name: /Attempts of ping/ })
      .getByRole('row')
      .nth(2)
      .waitFor();
    t.is(receiver.requests[0]?.delivery, receiver.requests[1]?.delivery);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
    // Exactly: the closing confirmation's name, "Rotate the signing secret of …", holds the word.
    t.regex((await page.getByLabel('Secret', { exact: true }).textContent()) ?? '', /^whsec_/);
    // The resent delivery's new attempt succeeds, and the log shows it without a reload.
    await page.locator('.delivery-head').getByText('succeeded').waitFor();
    await screenshot(page, 'endpoint');

    // A job posted through the API with that key appears and prints, without a reload.
    await go(page, 'Jobs');
    await page.evaluate(() => {
      (globalThis as unknown as { stayed: boolean }).stayed = true;
    });
    await page.getByText('Live', { exact: true }).waitFor();
    const postJob = (fields: { title: string; reference: string; data: string }) =>
      call<{ job: { id: string } }>(org.sys.url, 'POST', `/v1/orgs/${org.orgId}/jobs`, {
        token: secret,
        body: {
          printer_id: org.printerId,
          title: fields.title,
          reference: fields.reference,
          content: { type: 'text', data: fields.data },
        },
      });
    const created = await postJob({
      title: 'Invoice 1042',
      reference: 'order-1042',
      data: 'Invoice 1042\nTotal: 12.00 EUR\n',
    });
    t.is(created.status, 201);
    const row = page.locator(`tr[data-job-id="${created.body.job.id}"]`);
    await row.getByText('printed').waitFor({ timeout: 30_000 });
    t.true(
      await page.evaluate(() => (globalThis as unknown as { stayed?: boolean }).stayed === true),
    );
    await eventually(
      () => org.printedFiles(),
      (files) => files.length === 1,
    );
    await screenshot(page, 'jobs');

    // A title and a reference with nowhere to break wrap in their cells: the list stays as wide as
    // the page, every column in sight.
    const long = await postJob({
      title: `Shipment-${'X'.repeat(150)}`,
      reference: `ref-${'9'.repeat(96)}`,
      data: 'label',
    });
    t.is(long.status, 201);
    await page.locator(`tr[data-job-id="${long.body.job.id}"]`).waitFor();
    t.true(
      await page.evaluate(
        `(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth <= w.clientWidth; })()`,
      ),
      'the jobs list does not scroll sideways on a desktop',
    );

    await row.getByRole('link', { name: 'Invoice 1042' }).click();
    await page.getByRole('heading', { name: 'Invoice 1042' }).waitFor();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await page.locator('.timeline').getByText('printed', { exact: true }).waitFor();
    await page.getByText('Total: 12.00 EUR').waitFor();
    t.true(await page.getByRole('button', { name: 'Reprint job' }).isEnabled());
    t.true(await page.getByRole('button', { name: 'Cancel job' }).isDisabled());
    t.is(await page.getByRole('button', { name: 'Retry job' }).count(), 1);
    await screenshot(page, 'job');

    await go(page, 'Printers');
    await page.getByRole('row', { name: /desk/ }).getByText('ready').waitFor();
    await screenshot(page, 'printers');

    await go(page, 'Stations');
    await page.getByRole('row').getByText('online').first().waitFor();
    await page.getByLabel('Name').fill('Back office');
    await page.getByRole('button', { name: 'Create station' }).click();
    t.regex((await page.getByLabel('Secret').textContent()) ?? '', /^svc_dev_/);
    await page.getByRole('row', { name: /Back office/ }).waitFor();
    await screenshot(page, 'stations');

    await go(page, 'Overview');
    await page.getByRole('heading', { name: 'Jobs today' }).waitFor();
    await screenshot(page, 'overview');
    await go(page, 'Settings');
    await page.getByLabel('Organization name').fill('Acme Print & Mail');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('banner').getByText('Acme Print & Mail').waitFor();
    await screenshot(page, 'settings');

    // The owner invites a viewer from the console.
    await go(page, 'People');
    await page.getByLabel('Email').fill(VIEWER.email);
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const viewerUrl = (await page.getByLabel('Invitation link').textContent()) ?? '';
    t.regex(viewerUrl, /\/console\/invitation#/);
    await screenshot(page, 'people');

    // The viewer sees keys but cannot make one: no control, and the API refuses.
    const viewer = await newPage();
    await accept(viewer, viewerUrl, VIEWER);
    await go(viewer, 'API keys');
    await viewer.getByRole('row', { name: /shop backend/ }).waitFor();
    t.is(await viewer.getByRole('button', { name: 'Create key' }).count(), 0);
    t.is(await viewer.getByRole('button', { name: 'Revoke' }).count(), 0);
    const refused = await pageCall(viewer, 'POST', `/console/v1/orgs/${org.orgId}/keys`, {
      mode: 'test',
      scopes: ['jobs:read'],
    });
    t.is(refused.status, 403, refused.text);
    t.regex(refused.text, /developer/);
    await go(viewer, 'Webhooks');
    await viewer.getByRole('heading', { name: `${receiver.url}/spool` }).waitFor();
    await viewer.getByRole('heading', { name: 'Delivery log' }).waitFor();
    for (const name of ['Create endpoint', 'Rotate secret', 'Send test', 'Resend']) {
      t.is(await viewer.getByRole('button', { name }).count(), 0, name);
    }
    await go(viewer, 'Jobs');
    await viewer.getByRole('link', { name: 'Invoice 1042' }).click();
    await viewer.getByRole('heading', { name: 'Timeline' }).waitFor();
    t.is(await viewer.getByRole('button', { name: 'Reprint job' }).count(), 0);

    // The owner makes the viewer a developer: Create key appears for them; then removes them.
    await go(page, 'People');
    // Escape leaves the role as it was, on the server and in the select; confirming changes it.
    const access = page.getByLabel(`Access of ${VIEWER.name}`);
    await access.selectOption('developer');
    const dialog = page.getByRole('dialog', { name: `Make ${VIEWER.name} a developer?` });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    t.is(await access.inputValue(), 'viewer');
    t.regex((await pageCall(viewer, 'GET', '/console/v1/session')).text, /"viewer"/);
    await access.selectOption('developer');
    await dialog.getByRole('button', { name: 'Change role' }).click();
    await eventually(
      () => pageCall(viewer, 'GET', '/console/v1/session'),
      (r) => r.text.includes('"developer"'),
    );
    await go(viewer, 'API keys');
    await viewer.reload();
    await viewer.getByRole('button', { name: 'Create key' }).waitFor();
    await page.getByRole('button', { name: `Remove ${VIEWER.name}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
    await page.getByRole('row', { name: new RegExp(VIEWER.email) }).waitFor({ state: 'detached' });
    await eventually(
      () => pageCall(viewer, 'GET', `/console/v1/orgs/${org.orgId}/keys`),
      (r) => r.status === 404,
    );

    // The owner revokes the key; the API stops taking it.
    await go(page, 'API keys');
    await page
      .getByRole('row', { name: /shop backend/ })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page
      .getByRole('row', { name: /shop backend/ })
      .getByText('revoked')
      .waitFor();
    await eventually(
      () => call(org.sys.url, 'GET', '/v1/key', { token: secret }),
      (r) => r.status === 401,
    );

    // Sign out: the sign-in page, and the session no longer works.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    t.is((await pageCall(page, 'GET', '/console/v1/session')).status, 401);
    await screenshot(page, 'sign-in');
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('wrong email or password').waitFor();
    // Again with the keyboard alone: type, Tab, type, Enter; then a link, with a visible focus.
    await page.getByLabel('Password').fill('');
    await page.getByLabel('Email').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.type(OWNER.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByRole('link', { name: 'Overview' }).focus();
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(
      `(() => { const e = document.activeElement; return [e.textContent, getComputedStyle(e).outlineStyle]; })()`,
    );
    t.deepEqual(focused, ['Jobs', 'solid']);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();

    // On a phone: the menu opens the navigation.
    const phone = await newPage(390, 844);
    await accept(phone, await invite('dev@example.com', 'developer'), {
      name: 'Dev Eloper',
      password: 'developer password',
    });
    await phone.getByRole('button', { name: 'Menu' }).click();
    await go(phone, 'Jobs');
    await phone.getByRole('link', { name: 'Invoice 1042' }).waitFor();
    await screenshot(phone, 'jobs-phone');
    // Nothing is wider than the phone: lists are columns of cards there.
    const fits = () => phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth');
    t.true(await fits(), 'Jobs fits a phone');
    for (const [link, control] of [
      ['API keys', 'Create key'],
      ['Webhooks', 'Send test'],
    ] as const) {
      await phone.getByRole('button', { name: 'Menu' }).click();
      await go(phone, link);
      await phone.getByRole('button', { name: control }).waitFor();
      t.true(await fits(), `${link} fits a phone`);
    }
    await screenshot(phone, 'webhooks-phone');

    t.deepEqual(errors, []);
  },
);
