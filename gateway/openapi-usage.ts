/**
 * The OpenAPI operation of usage per organization and UTC day (gateway/routes/usage.ts), keyed as
 * V1_ROUTES keys it, described from the schemas that read its query and check its answer.
 */
import {
  DEFAULT_USAGE_DAYS,
  MAX_USAGE_DAYS,
  MAX_USAGE_ITEMS,
  ZERO_USAGE,
} from '../lib/contracts/usage.js';
import type { OperationSpec } from './openapi-builder.js';
import { EXAMPLE_ID } from './openapi-shared.js';
import { USAGE_QUERY, UsageAnswer } from './routes/usage.js';

const CHILD_ID = '0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

const day = (date: string, orgId: string, figures: Record<string, number>) => ({
  date,
  org_id: orgId,
  ...ZERO_USAGE,
  ...figures,
});

export const USAGE_OPERATIONS: Record<string, OperationSpec> = {
  'GET /v1/orgs/:org/usage': {
    operationId: 'getUsage',
    tag: 'Organizations',
    summary: 'Usage per UTC day: jobs, pages, bytes and webhook deliveries',
    description: [
      `One item per UTC day from \`from\` to \`to\` (both included; ${DEFAULT_USAGE_DAYS} days up to today by default, at most ${MAX_USAGE_DAYS}) and organization: the organization's own, and with \`children=true\` each of its child organizations' too. Days without activity are answered with zeros. Items come by date, then the organization before its children, the children oldest first. An answer holds at most ${MAX_USAGE_ITEMS} items (days × organizations); ask for fewer days, or for each child on its own (\`/v1/orgs/{child}/usage\` with the parent's key), beyond.`,
      '',
      'A job counts as created, with its bytes, on the day it was created, and as printed or failed on the day it finished; `pages` counts the pages of the PDFs printed that day times their copies. A delivery is an event delivered to an endpoint (a test ping is not). Figures are counted from the jobs and the delivery log a minute or two after they are written, so today’s grow through the day.',
    ].join('\n'),
    query: USAGE_QUERY,
    success: {
      status: 200,
      description: 'the figures of each day and organization',
      schema: UsageAnswer,
      example: {
        items: [
          day('2026-05-01', EXAMPLE_ID.org, {
            jobs_created: 120,
            jobs_printed: 118,
            jobs_failed: 2,
            pages: 236,
            bytes: 4_718_592,
            webhook_deliveries: 240,
          }),
          day('2026-05-01', CHILD_ID, {}),
        ],
      },
    },
    errors: ['invalid', 'unknown_field'],
  },
};
