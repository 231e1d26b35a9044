/**
 * Makes `client/generated/schema.ts`, the client's types, from the OpenAPI document the gateway
 * serves at `GET /v1/openapi.json` (`buildOpenApi()`), with openapi-typescript. `npm run gen:client`
 * writes it; test/client-schema.test.ts fails when the committed file differs from what this makes.
 */
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import { buildOpenApi } from '../../gateway/openapi.js';

/** Where the generated types live, relative to the repository root. */
export const SCHEMA_PATH = 'client/generated/schema.ts';

/** The text of the generated file, from the document as the gateway builds it now. */
export async function generateSchema(): Promise<string> {
  const document = buildOpenApi() as unknown as OpenAPI3;
  const nodes = await openapiTS(document, { silent: true });
  return `${COMMENT_HEADER.replace(
    ' */',
    ' * Made by `npm run gen:client` from the document of gateway/openapi.ts (GET /v1/openapi.json).\n */',
  )}${astToString(nodes)}`;
}
