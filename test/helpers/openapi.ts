/**
 * Checks API answers against the OpenAPI documents the gateway serves: every JSON answer a test
 * receives from a `/v1` or `/admin/v1` path must match the schema its document gives for its path,
 * method and status, and the status must be one the document declares for the operation.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import { buildOpenApi } from '../../gateway/openapi.js';
import { buildAdminOpenApi } from '../../gateway/openapi-admin.js';

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
};

const ajv = new Ajv2020.default({ strict: false, allErrors: false });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
ajv.addFormat('uri', /^[a-z][a-z0-9+.-]*:\S*$/i);
ajv.addFormat('uri-reference', /^\S*$/);

/** The two documents, each added to ajv under its own id so that `$ref`s into it resolve. */
const documents = [
  { id: 'spool-v1', prefix: '/v1/', doc: buildOpenApi() as unknown as Doc },
  { id: 'spool-admin-v1', prefix: '/admin/v1/', doc: buildAdminOpenApi() as unknown as Doc },
].map((d) => {
  ajv.addSchema({ ...d.doc, $id: d.id } as object);
  return {
    ...d,
    routes: Object.keys(d.doc.paths).map((path) => ({
      path,
      pattern: new RegExp(`^${path.replace(/\{[a-z_]+\}/g, '[^/]+')}$`),
    })),
  };
});

const compiled = new Map<string, ValidateFunction>();

function validator(ref: string): ValidateFunction {
  let v = compiled.get(ref);
  if (!v) {
    v = ajv.compile({ $ref: ref });
    compiled.set(ref, v);
  }
  return v;
}

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Throws when a JSON answer from a `/v1` or `/admin/v1` path does not match its document. */
export function checkAgainstOpenApi(
  method: string,
  url: string,
  status: number,
  body: unknown,
): void {
  const path = new URL(url, 'http://x').pathname;
  const d = documents.find((x) => path.startsWith(x.prefix));
  if (!d || path.endsWith('/openapi.json')) return;
  const route = d.routes.find((r) => r.pattern.test(path));
  const m = method.toLowerCase();
  const operation = route ? d.doc.paths[route.path]?.[m] : undefined;
  let ref: string;
  if (!operation || !route) {
    ref = `${d.id}#/components/schemas/Error`;
  } else {
    const response = operation.responses[String(status)];
    if (!response)
      throw new Error(`OpenAPI: ${method} ${route.path} does not declare status ${status}`);
    if (!response.content?.['application/json'])
      throw new Error(`OpenAPI: ${method} ${route.path} ${status} is not declared as JSON`);
    ref = `${d.id}#/${pointer('paths', route.path, m, 'responses', String(status), 'content', 'application/json', 'schema')}`;
  }
  const validate = validator(ref);
  if (!validate(body)) {
    throw new Error(
      `OpenAPI: the answer to ${method} ${path} (${status}) does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
