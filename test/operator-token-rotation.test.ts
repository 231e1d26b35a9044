/**
 * Rotating the operator token without a moment when neither works: while a gateway is given the
 * new token and the one it replaces (SPOOL_ADMIN_TOKEN_PREVIOUS), both are the operator, in the
 * admin API and in the audit log; any other token is refused as before.
 */
import test from 'ava';
import { call, startTestSystem } from './helpers/system.js';

const NEW = 'rotated-operator-token-new';
const OLD = 'rotated-operator-token-old';

test('during a rotation the new and the previous operator token both work, and nothing else', async (t) => {
  const sys = await startTestSystem({ operatorToken: [NEW, OLD] });
  t.teardown(() => sys.stop());
  const orgs = (token: string) => call(sys.url, 'GET', '/admin/v1/orgs', { token });
  t.is((await orgs(NEW)).status, 200);
  t.is((await orgs(OLD)).status, 200);
  const other = await call<{ error: { message: string } }>(sys.url, 'GET', '/admin/v1/orgs', {
    token: 'rotated-operator-token-oth',
  });
  t.is(other.status, 401);
  t.regex(other.body.error.message, /^wrong operator token/);

  // A change made with the previous token is the operator's, in the audit log too.
  const made = await call<{ org: { id: string } }>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OLD,
    body: { name: 'Made with the old token' },
  });
  t.is(made.status, 201);
  const audit = await call<{ items: Array<{ actor: string; route: string; status: number }> }>(
    sys.url,
    'GET',
    `/admin/v1/audit?org=${made.body.org.id}`,
    { token: NEW },
  );
  t.like(audit.body.items[0], { actor: 'operator', route: '/admin/v1/orgs', status: 201 });
});
