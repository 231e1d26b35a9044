/**
 * Checks API answers against the OpenAPI document the gateway serves: every JSON answer a test
 * receives from a `/v1` path must match the schema the document gives for its path, method and
 * status.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import { buildOpenApi } from '../../gateway/openapi.js';

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
  components: { schemas: { Error: object } };
};

const doc = JSON.parse(JSON.stringify(buildOpenApi())) as Doc;
const ajv = new Ajv2020.default({ strict: false, allErrors: false });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
ajv.addSchema(doc.components.schemas.Error, '#/components/schemas/Error');

const routes = Object.keys(doc.paths).map((path) => ({
  path,
  pattern: new RegExp(`^${path.replace(/\{[a-z_]+\}/g, '[^/]+')}$`),
}));

const compiled = new Map<string, ValidateFunction>();

function validator(key: string, schema: object): ValidateFunction {
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(key, v);
  }
  return v;
}

/** Throws when a JSON answer from a `/v1` path does not match the OpenAPI document. */
export function checkAgainstOpenApi(
  method: string,
  url: string,
  status: number,
  body: unknown,
): void {
  const path = new URL(url, 'http://x').pathname;
  if (!path.startsWith('/v1/') || path === '/v1/openapi.json') return;
  const route = routes.find((r) => r.pattern.test(path));
  const operation = route ? doc.paths[route.path]?.[method.toLowerCase()] : undefined;
  let schema: object;
  let key: string;
  if (!operation) {
    schema = doc.components.schemas.Error;
    key = 'error';
  } else {
    const response = operation.responses[String(status)];
    if (!response)
      throw new Error(`OpenAPI: ${method} ${route?.path} does not declare status ${status}`);
    const json = response.content?.['application/json'];
    if (!json)
      throw new Error(`OpenAPI: ${method} ${route?.path} ${status} is not declared as JSON`);
    schema = json.schema;
    key = `${method} ${route?.path} ${status}`;
  }
  const validate = validator(key, schema);
  if (!validate(body)) {
    throw new Error(
      `OpenAPI: the answer to ${method} ${path} (${status}) does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
