/**
 * Usage per organization and UTC day (DESIGN §5, docs/platforms.md): what a platform bills its
 * customers by. `GET /v1/orgs/{org}/usage` answers one item per day of the range and organization
 * (the organization, and its children with `children=true`), days without activity included as
 * zeros, so a chart or an invoice needs no gaps filled. The figures come from the rollups of the
 * jobs service (jobs, pages, bytes) and the webhooks service (deliveries), asked for a group of
 * organizations at a time; the children are the accounts service's list of the organization's.
 */
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.js';
import {
  addDays,
  DEFAULT_USAGE_DAYS,
  datesIn,
  daysIn,
  isUsageDate,
  MAX_USAGE_DAYS,
  MAX_USAGE_ITEMS,
  MAX_USAGE_ORGS,
  type UsageFigures,
  utcDate,
  ZERO_USAGE,
} from '../../lib/contracts/usage.js';
import { invalid } from '../../lib/errors.js';
import { MAX_LIMIT } from '../../lib/paging.js';
import type { Backends } from '../clients.js';
import { flagParam, type QueryParam, type QuerySpec, readQuery, single } from '../query.js';
import type { GatewayState } from '../state.js';
import { orgOf } from './context.js';

type Handler = Middleware<GatewayState>;

const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

/** A UTC date `YYYY-MM-DD`, undefined when absent; anything else is a 400 naming it. */
function dateParam(description: string): QueryParam<string | undefined> {
  return {
    description,
    schema: { type: 'string', pattern: DATE_PATTERN, examples: ['2026-05-01'] },
    read: (query, name) => {
      const raw = single(query, name);
      if (raw === undefined) return undefined;
      if (!isUsageDate(raw)) throw invalid(`${name} must be a date, YYYY-MM-DD (UTC)`, name);
      return raw;
    },
  };
}

/** The query of `GET /v1/orgs/{org}/usage`. */
export const USAGE_QUERY = {
  from: dateParam(
    `the first UTC day, YYYY-MM-DD (default: ${DEFAULT_USAGE_DAYS - 1} days before \`to\`, so ${DEFAULT_USAGE_DAYS} days in all); at most ${MAX_USAGE_DAYS} days before \`to\``,
  ),
  to: dateParam('the last UTC day, YYYY-MM-DD, included (default: today, UTC)'),
  children: flagParam(
    "true: the organization's child organizations too, each with its own items (default false)",
  ),
} as const satisfies QuerySpec;

const Count = (description: string) => Type.Integer({ minimum: 0, description });

/** One organization's figures on one UTC day. */
export const UsageItemSchema = Type.Object(
  {
    date: Type.String({ pattern: DATE_PATTERN, description: 'the UTC day, YYYY-MM-DD' }),
    org_id: Type.String({ format: 'uuid' }),
    jobs_created: Count('jobs created that day'),
    jobs_printed: Count('jobs that finished printed that day'),
    jobs_failed: Count(
      'jobs that finished failed that day and are failed still (a failed job retried counts where it finishes next)',
    ),
    pages: Count(
      'pages of the PDFs printed that day, each PDF’s page count times its copies (other documents count none)',
    ),
    bytes: Count('bytes of the documents of the jobs created that day'),
    webhook_deliveries: Count('events delivered to webhook endpoints that day'),
  },
  { additionalProperties: false },
);

/** `{items}` */
export const UsageAnswer = Type.Object(
  { items: Type.Array(UsageItemSchema) },
  { additionalProperties: false },
);

type Figures = UsageFigures;

const ZERO: Readonly<Figures> = ZERO_USAGE;

/** The first and last day asked for, with the defaults filled in and the bounds checked. */
export function usageRange(
  asked: { from: string | undefined; to: string | undefined },
  today: string,
): { from: string; to: string } {
  const to = asked.to ?? today;
  const from = asked.from ?? addDays(to, -(DEFAULT_USAGE_DAYS - 1));
  if (from > to) {
    throw invalid(`from must not be after to (${to}${asked.to ? '' : ', today'})`, 'from');
  }
  if (daysIn(from, to) > MAX_USAGE_DAYS) {
    throw invalid(`from and to may span at most ${MAX_USAGE_DAYS} days`, 'from');
  }
  return { from, to };
}

/** The organization's children, oldest first, every page of them. */
async function childrenOf(backends: Backends, orgId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  do {
    const page = await backends.accounts.listChildOrgs({
      orgId,
      reference: '',
      limit: MAX_LIMIT,
      cursor,
    });
    ids.push(...page.items.map((org) => org.id));
    cursor = page.nextCursor;
  } while (cursor !== '');
  return ids;
}

/** Each service's figures for `orgIds`, asked for a group of organizations at a time. */
async function figuresOf(
  backends: Backends,
  orgIds: readonly string[],
  from: string,
  to: string,
): Promise<Map<string, Figures>> {
  const byKey = new Map<string, Figures>();
  const at = (date: string, orgId: string) => {
    const key = `${date}/${orgId}`;
    let figures = byKey.get(key);
    if (!figures) {
      figures = { ...ZERO };
      byKey.set(key, figures);
    }
    return figures;
  };
  for (let i = 0; i < orgIds.length; i += MAX_USAGE_ORGS) {
    const group = orgIds.slice(i, i + MAX_USAGE_ORGS);
    const [jobs, deliveries] = await Promise.all([
      backends.jobs.getUsage({ orgIds: group, from, to }),
      backends.webhooks.getDeliveryUsage({ orgIds: group, from, to }),
    ]);
    for (const day of jobs.items) {
      Object.assign(at(day.date, day.orgId), {
        jobs_created: day.jobsCreated,
        jobs_printed: day.jobsPrinted,
        jobs_failed: day.jobsFailed,
        pages: day.pages,
        bytes: day.bytes,
      });
    }
    for (const day of deliveries.items) {
      at(day.date, day.orgId).webhook_deliveries = day.deliveries;
    }
  }
  return byKey;
}

export function usageV1Handlers(deps: {
  backends: Backends;
  clock: Clock;
}): Record<string, Handler> {
  return {
    'GET /v1/orgs/:org/usage': async (ctx) => {
      const query = readQuery(ctx.query, USAGE_QUERY);
      const { from, to } = usageRange(query, utcDate(deps.clock.now()));
      const orgId = orgOf(ctx);
      const orgIds = [orgId, ...(query.children ? await childrenOf(deps.backends, orgId) : [])];
      const dates = datesIn(from, to);
      if (dates.length * orgIds.length > MAX_USAGE_ITEMS) {
        throw invalid(
          `${dates.length} days of ${orgIds.length} organizations make ${dates.length * orgIds.length} items, more than the ${MAX_USAGE_ITEMS} one answer holds: ask for fewer days (from), or for each child on its own`,
          'from',
        );
      }
      const figures = await figuresOf(deps.backends, orgIds, from, to);
      ctx.body = {
        items: dates.flatMap((date) =>
          orgIds.map((id) => ({
            date,
            org_id: id,
            ...(figures.get(`${date}/${id}`) ?? ZERO),
          })),
        ),
      };
    },
  };
}
