/**
 * What the `/v1` and `/admin/v1` documents say alike: the ids their examples use, the tags both
 * have, and the shape of an operator list.
 */
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '../lib/errors.js';
import type { OperationSpec } from './openapi-builder.js';
import { LIST_QUERY, type QuerySpec } from './query.js';
import { itemsOf } from './schemas.js';

/** The ids of the examples, one per kind of resource, so that examples refer to each other. */
export const EXAMPLE_ID = {
  org: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
  job: '3f2e1d0c-b9a8-4765-9432-10fedcba9876',
  printer: '6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e',
  station: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  location: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918',
  template: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
  upload: '8d7c6b5a-4938-4271-a6f5-e4d3c2b1a098',
  key: '4c3b2a19-0f8e-4d7c-b6a5-948372615a4b',
  endpoint: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
} as const;

export const LOCATIONS_TAG = { name: 'Locations', description: 'Where stations and printers are' };

export const TEMPLATES_TAG = {
  name: 'Templates',
  description: 'Templates that jobs fill with field values',
};

/**
 * A list of the operator API: a page of `item`s in `items`, taking `query` (paging only unless it
 * says more), its 400 an `invalid` parameter.
 */
export function operatorList(list: {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** What the page is, such as `a page of keys`. */
  page: string;
  item: TSchema;
  query?: QuerySpec;
  /** Errors besides `invalid`. */
  errors: readonly ErrorCode[];
}): OperationSpec {
  const { page, item, query = LIST_QUERY, errors, ...op } = list;
  return {
    ...op,
    query,
    success: { status: 200, description: page, schema: itemsOf(item) },
    errors: ['invalid', ...errors],
  };
}
