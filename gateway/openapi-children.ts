/** The OpenAPI operations of gateway/routes/children.ts, keyed as V1_ROUTES keys them. */
import type { OperationSpec } from './openapi-builder.js';

export const CHILD_OPERATIONS: Record<string, OperationSpec> = {};
