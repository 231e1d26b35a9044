/**
 * The documents say what the routes accept, and the routes accept what the documents say: every
 * query parameter an operation lists is taken, with the bounds, choices, formats and lengths its
 * schema gives, a parameter it does not list is refused where the document says so, an upload
 * takes the media types documented, and each kind of job content takes the fields its schema
 * names. Each check asks a running Spool, so it holds whoever reads the query or body.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { buildOpenApi } from '../gateway/openapi.js';
import { buildAdminOpenApi } from '../gateway/openapi-admin.js';
import { SCOPES } from '../lib/credentials.js';
import {
  call,
  createKey,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface ParamSchema {
  type?: string;
  format?: string;
  enum?: string[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  example?: string;
  examples?: string[];
}

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string; schema: ParamSchema }>;
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { description: string }>;
}

type Doc = { paths: Record<string, Record<string, Operation>> };

interface ErrorBody {
  error?: { code: string; message: string; param?: string };
}

const test = anyTest as TestFn<{ sys: TestSystem; org: string; key: string; endpoint: string }>;

test.before(async (t) => {
  // Every check is a request of one key: far more than a minute's default.
  const sys = await startTestSystem({ keyRateLimit: 100_000 });
  const org = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, org, { scopes: SCOPES });
  const created = await call<{ endpoint: { id: string } }>(
    sys.url,
    'POST',
    `/v1/orgs/${org}/webhooks`,
    { token: secret, body: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } },
  );
  if (created.status !== 201) throw new Error(`create endpoint answered ${created.status}`);
  t.context = { sys, org, key: secret, endpoint: created.body.endpoint.id };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

const documents = [
  { name: '/v1', doc: buildOpenApi() as unknown as Doc, operator: false },
  { name: '/admin/v1', doc: buildAdminOpenApi() as unknown as Doc, operator: true },
];

/** A GET whose answer is only its status and error: an event stream is closed once it opens. */
async function get(url: string, token: string): Promise<{ status: number; body: ErrorBody }> {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    abort.abort();
    return { status: res.status, body: {} };
  }
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('json') && text !== '';
  return { status: res.status, body: json ? (JSON.parse(text) as ErrorBody) : {} };
}

/** Values the schema allows, where the schema alone says what they are: each of an enum's. */
function allowed(schema: ParamSchema): string[] {
  if (schema.enum) return schema.enum;
  if (schema.format === 'uuid') return [randomUUID()];
  if (schema.format === 'date-time') return ['2026-05-01T12:00:00Z'];
  if (schema.type === 'integer') {
    return [schema.minimum, schema.maximum].filter((n) => n !== undefined).map(String);
  }
  const example = schema.example ?? schema.examples?.[0];
  return example === undefined ? [] : [example];
}

/** Values the schema refuses, each with what makes it refused. */
function refused(schema: ParamSchema): Array<[string, string]> {
  const values: Array<[string, string]> = [];
  if (schema.type === 'integer') {
    if (schema.maximum !== undefined) values.push([String(schema.maximum + 1), 'above maximum']);
    if (schema.minimum !== undefined) values.push([String(schema.minimum - 1), 'below minimum']);
    values.push(['many', 'not an integer']);
  }
  if (schema.enum) values.push(['none-of-these', 'not in enum']);
  if (schema.format === 'uuid') values.push(['not-an-id', 'not a uuid']);
  if (schema.format === 'date-time') values.push(['yesterday', 'not a date-time']);
  if (schema.pattern) values.push(['~', 'not matching its pattern']);
  if (schema.maxLength !== undefined) values.push(['x'.repeat(schema.maxLength + 1), 'too long']);
  return values;
}

for (const { name, doc, operator } of documents) {
  test(`${name}: every GET takes the query parameters its document lists, with their bounds, choices and formats, and refuses others where the document says so`, async (t) => {
    const { sys, org, key, endpoint } = t.context;
    const token = operator ? OPERATOR_TOKEN : key;
    let checked = 0;
    for (const [template, ops] of Object.entries(doc.paths)) {
      const op = ops.get;
      if (!op) continue;
      const path = template
        .replace('{org}', org)
        .replace('{id}', template.includes('/webhooks/') ? endpoint : randomUUID())
        .replace(/\{[a-z_]+\}/g, () => randomUUID());
      const at = (query: Record<string, string>) =>
        `${sys.url}${path}?${new URLSearchParams(query).toString()}`;
      const query = (op.parameters ?? []).filter((p) => p.in === 'query');
      for (const { name: param, schema } of query) {
        const where = `${op.operationId} ?${param}`;
        const taken = await get(at({ [param]: 'x' }), token);
        t.not(taken.body.error?.code, 'unknown_field', `${where} is listed but refused`);
        for (const value of allowed(schema)) {
          const res = await get(at({ [param]: value }), token);
          t.is(res.status, 200, `${where}=${value}: ${res.body.error?.message}`);
        }
        for (const [bad, why] of refused(schema)) {
          const res = await get(at({ [param]: bad }), token);
          t.is(res.status, 400, `${where} ${why} is taken`);
          t.is(res.body.error?.code, 'invalid', `${where} ${why}`);
          t.is(res.body.error?.param, param, `${where} ${why}`);
        }
        checked++;
      }
      if (op.responses['400']?.description.includes('unknown_field')) {
        const res = await get(at({ not_a_parameter: '1' }), token);
        t.is(
          res.body.error?.code,
          'unknown_field',
          `${op.operationId} takes what it does not list`,
        );
        t.is(res.body.error?.param, 'not_a_parameter');
      }
    }
    t.true(checked > 0);
  });
}

test('/v1: an upload takes the media types its document lists and refuses others as unsupported', async (t) => {
  const { sys, org, key } = t.context;
  const op = (buildOpenApi() as unknown as Doc).paths['/v1/orgs/{org}/uploads']?.post;
  const documented = Object.keys(op?.requestBody?.content ?? {});
  t.true(documented.length > 0);
  for (const type of [...documented, 'image/png', 'application/json']) {
    const res = await fetch(`${sys.url}/v1/orgs/${org}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': type },
      body: 'hello',
    });
    const answer = (await res.json()) as ErrorBody;
    // A documented type may still be refused for its bytes ("hello" is no PDF), never for its type.
    if (documented.includes(type)) t.not(res.status, 415, `${type}: ${answer.error?.message}`);
    else t.is(answer.error?.code, 'unsupported_media_type', type);
  }
});

test('/v1: each kind of job content takes the fields its schema names, needs those it requires, and refuses the others', async (t) => {
  const { sys, org, key } = t.context;
  const schemas = (
    buildOpenApi() as unknown as {
      components: {
        schemas: Record<
          string,
          { properties: Record<string, { type?: string }>; required?: string[] }
        >;
      };
    }
  ).components.schemas;
  const kinds = Object.keys(schemas)
    .filter((n) => n.startsWith('JobContent_'))
    .map((n) => n.slice('JobContent_'.length));
  t.true(kinds.length > 0);
  /** Every field some kind takes, with a value of its type. */
  const sample = new Map(
    kinds.flatMap((k) =>
      Object.entries(schemas[`JobContent_${k}`]?.properties ?? {}).map(
        ([f, s]) => [f, s.type === 'object' ? {} : 'x'] as const,
      ),
    ),
  );
  const create = (content: Record<string, unknown>) =>
    call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${org}/jobs`, {
      token: key,
      body: { printer_id: randomUUID(), content },
    });
  for (const kind of kinds) {
    const schema = schemas[`JobContent_${kind}`] ?? { properties: {} };
    const fields = Object.keys(schema.properties).filter((f) => f !== 'type');
    const full = Object.fromEntries(fields.map((f) => [f, sample.get(f)]));
    const all = await create({ type: kind, ...full });
    t.not(all.body.error?.code, 'unknown_field', `${kind} refuses a field it lists`);
    t.notRegex(all.body.error?.message ?? '', /is required/, kind);
    for (const required of (schema.required ?? []).filter((f) => f !== 'type')) {
      const { [required]: _, ...without } = full;
      const res = await create({ type: kind, ...without });
      t.is(res.body.error?.param, `content.${required}`, `${kind} without ${required}`);
      t.regex(res.body.error?.message ?? '', /is required/, `${kind} without ${required}`);
    }
    for (const [other, value] of [...sample].filter(([f]) => !(f in schema.properties))) {
      const res = await create({ type: kind, ...full, [other]: value });
      t.is(res.body.error?.code, 'unknown_field', `${kind} takes ${other}`);
      t.is(res.body.error?.param, `content.${other}`);
    }
  }
});
