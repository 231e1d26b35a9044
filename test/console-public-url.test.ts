/**
 * PUBLIC_URL: the base of invitation links, and an origin the console may be served from (behind
 * a proxy whose public address differs from the gateway's own). Without Secure, the cookie is as
 * `spool dev` sets it.
 */
import test from 'ava';
import { Browser, type ErrorBody, invite, PASSWORD, sessionCookieOf } from './helpers/console.js';
import { createOrg, startTestSystem } from './helpers/system.js';

test('PUBLIC_URL starts invitation links and is an allowed Origin; the cookie may leave out Secure', async (t) => {
  const sys = await startTestSystem({
    publicUrl: 'https://print.example.com/',
    secureCookies: false,
  });
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url, 'Proxied');
  const { url } = await invite(sys.url, orgId, 'proxied@example.com', 'owner');
  t.regex(url, /^https:\/\/print\.example\.com\/console\/invitation#svc_inv_[0-9A-Za-z]{43}$/);

  const owner = new Browser(sys.url);
  const accepted = await owner.accept(url, PASSWORD);
  t.is(accepted.status, 200);
  t.notRegex(sessionCookieOf(accepted.headers)?.header ?? '', /Secure/);

  const path = `/console/v1/orgs/${orgId}/invitations`;
  const body = { email: 'next@example.com', role: 'viewer' };
  const fromPublic = await owner.call<{ url: string }>('POST', path, {
    body,
    headers: { origin: 'https://print.example.com' },
  });
  t.is(fromPublic.status, 201);
  t.regex(fromPublic.body.url, /^https:\/\/print\.example\.com\/console\/invitation#/);
  const fromElsewhere = await owner.call<ErrorBody>('POST', path, {
    body: { ...body, email: 'other@example.com' },
    headers: { origin: 'https://print.example.com.evil.example' },
  });
  t.is(fromElsewhere.status, 403);
  t.regex(fromElsewhere.body.error.message, /Origin/);
});
