/**
 * The console when Spool is busy for a moment: a sign-in answered `429` with a short
 * `Retry-After` (too many passwords being checked at once) or `503`/`504` is sent again, as is any
 * read; a change is sent again after a `503`, which did nothing, but not after a `504`, which may
 * have; a refusal that lasts (too many failed sign-ins) is shown at once; a read that keeps timing
 * out is explained in a person's words. Chromium through playwright-core against a real Spool,
 * whose answers to one route are replaced by the busy ones where a test says so.
 */
import test from 'ava';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { launchChromium } from './helpers/browser.js';
import { member, PASSWORD } from './helpers/console.js';
import { createOrg, startTestSystem, type TestSystem } from './helpers/system.js';

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

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** Answers `route` as Spool does when busy: the catalogue's envelope, with `Retry-After`. */
function busy(route: Route, status: number, code: string, message: string, retryAfter: number) {
  return route.fulfill({
    status,
    headers: { 'Retry-After': String(retryAfter) },
    contentType: 'application/json',
    body: JSON.stringify({ error: { code, message } }),
  });
}

async function signIn(page: Page): Promise<void> {
  await page.goto(`${sys.url}/console/`);
  await page.getByLabel('Email').fill(ADMIN);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('a sign-in answered busy for a moment is sent again and goes through', async (t) => {
  const page = await newPage();
  let tries = 0;
  await page.route('**/console/v1/sign-in', async (route) => {
    tries++;
    if (tries === 1) {
      await busy(route, 429, 'rate_limited', 'too many passwords are being checked at once', 1);
    } else if (tries === 2) {
      await busy(route, 504, 'timeout', 'the accounts service did not answer in time', 1);
    } else await route.continue();
  });
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  t.is(tries, 3);
});

test('too many failed sign-ins is shown at once, not sent again', async (t) => {
  const page = await newPage();
  let tries = 0;
  await page.route('**/console/v1/sign-in', async (route) => {
    tries++;
    await busy(
      route,
      429,
      'rate_limited',
      'too many failed sign-ins: try again in 600 seconds',
      600,
    );
  });
  await signIn(page);
  await page.getByText('too many failed sign-ins: try again in 600 seconds').waitFor();
  t.is(tries, 1);
});

test('a page whose reads keep timing out says so in words for a person', async (t) => {
  const page = await newPage();
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  let reads = 0;
  await page.route('**/console/v1/orgs/*/keys', async (route) => {
    reads++;
    await busy(
      route,
      504,
      'timeout',
      'the accounts service did not answer in time, and may have done what was asked: retry with the same Idempotency-Key, which never does it twice',
      1,
    );
  });
  await page.goto(`${sys.url}/console/keys`);
  await page.getByText('Spool is busy and did not answer in time').waitFor();
  t.is(reads, 3, 'tried three times');
  t.false(await page.getByText('Idempotency-Key').isVisible());
});

test('a change answered 503 is sent again and made; one answered 504 is not sent twice', async (t) => {
  const page = await newPage();
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  let posts = 0;
  let answer: 503 | 504 = 503;
  await page.route('**/console/v1/orgs/*/locations', async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    posts++;
    if (answer === 503 && posts === 1) {
      return busy(route, 503, 'unavailable', 'the stations service is unavailable', 1);
    }
    if (answer === 504) {
      return busy(route, 504, 'timeout', 'the stations service did not answer in time', 1);
    }
    return route.continue();
  });
  await page.goto(`${sys.url}/console/locations`);

  // 503: nothing was done, so the console sends it again, and the location is made once.
  await page.getByRole('button', { name: 'Create location' }).click();
  await page.getByLabel('Name').fill('Dock');
  await page.getByRole('button', { name: 'Create location' }).click();
  await page.getByRole('row', { name: /Dock/ }).waitFor();
  t.is(posts, 2);

  // 504: it may have been done, so it is not sent again and the person is told to look first.
  answer = 504;
  posts = 0;
  await page.getByRole('button', { name: 'Create location' }).click();
  await page.getByLabel('Name').fill('Yard');
  await page.getByRole('button', { name: 'Create location' }).click();
  await page.getByText('Spool is busy and did not answer in time').waitFor();
  t.is(posts, 1);
});
