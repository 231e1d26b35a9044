/** The OpenAPI operations of gateway/routes/enrollments.ts, keyed as V1_ROUTES keys them. */
import type { OperationSpec } from './openapi-builder.js';

export const ENROLLMENT_OPERATIONS: Record<string, OperationSpec> = {};
