import { Validator } from '@seriousme/openapi-schema-validator';
import anyTest, { type TestFn } from 'ava';
import { openApiPath } from '../gateway/openapi.js';
import { V1_ROUTES } from '../gateway/routes/v1.js';
import { startTestSystem, type TestSystem } from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

test('GET /v1/openapi.json answers without a key, and the document validates as OpenAPI 3.1', async (t) => {
  const res = await fetch(`${t.context.sys.url}/v1/openapi.json`);
  t.is(res.status, 200);
  const doc = (await res.json()) as {
    openapi: string;
    paths: Record<string, Record<string, unknown>>;
  };
  t.is(doc.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc);
  t.true(result.valid, JSON.stringify(result.errors, null, 2));
  t.is(validator.version, '3.1');
  for (const route of V1_ROUTES) {
    t.truthy(
      doc.paths[openApiPath(route.path)]?.[route.method.toLowerCase()],
      `${route.method} ${route.path}`,
    );
  }
});

test('an answer that differs from the document is caught', async (t) => {
  const { checkAgainstOpenApi } = await import('./helpers/openapi.js');
  t.throws(() => checkAgainstOpenApi('GET', '/v1/key', 200, { id: 'x', live: 'yes' }), {
    message: /does not match/,
  });
  t.throws(() => checkAgainstOpenApi('GET', '/v1/key', 299, {}), {
    message: /does not declare status 299/,
  });
  t.notThrows(() =>
    checkAgainstOpenApi('GET', '/v1/nothing', 404, {
      error: { code: 'not_found', message: 'no endpoint', request_id: 'r' },
    }),
  );
});
