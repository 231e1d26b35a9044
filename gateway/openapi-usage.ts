/** The OpenAPI operations of gateway/routes/usage.ts, keyed as V1_ROUTES keys them. */
import type { OperationSpec } from './openapi-builder.js';

export const USAGE_OPERATIONS: Record<string, OperationSpec> = {};
