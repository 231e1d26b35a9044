/**
 * `spool admin webhook …`: one command per `/admin/v1/orgs/{org}/webhooks` route, printing the
 * JSON the gateway answers.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { AdminCall, AdminList } from './admin.js';
import { DELIVERY_COLUMNS, WEBHOOK_COLUMNS } from './admin-tables.js';
import { type Format, formatOption } from './table.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function seconds(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('give whole seconds, such as 3600');
  return Number(value);
}

const base = (org: string) => `/orgs/${encodeURIComponent(org)}/webhooks`;
const one = (org: string, id: string) => `${base(org)}/${encodeURIComponent(id)}`;

function listQuery(opts: object, names: string[]): string {
  const query = new URLSearchParams();
  for (const name of names) {
    const value = (opts as Record<string, unknown>)[name];
    if (typeof value === 'string' && value !== '') query.set(name, value);
  }
  return query.size > 0 ? `?${query}` : '';
}

interface Target {
  org: string;
  id: string;
}

/** Adds `webhook` and its subcommands to `spool admin`. */
export function addWebhookCommands(adminCommand: Command, admin: AdminCall, list: AdminList): void {
  const webhook = adminCommand
    .command('webhook')
    .description('webhook endpoints, their secrets and delivery logs');
  const target = (cmd: Command) =>
    cmd
      .requiredOption('--org <org>', 'organization id')
      .requiredOption('--id <endpoint>', 'webhook endpoint id');

  webhook
    .command('create')
    .description('add an endpoint; prints its signing secret, shown only this once')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--url <url>', 'the https URL deliveries are POSTed to')
    .option(
      '--event <type>',
      'an event type such as job.printed, or * for all; repeatable',
      collect,
      [],
    )
    .option('--description <text>', 'what the endpoint is for')
    .action((opts: { org: string; url: string; event: string[]; description?: string }) =>
      admin('POST', base(opts.org), {
        url: opts.url,
        events: opts.event,
        ...(opts.description === undefined ? {} : { description: opts.description }),
      }),
    );

  webhook
    .command('list')
    .description("list an organization's webhook endpoints, a page at a time")
    .requiredOption('--org <org>', 'organization id')
    .option('--limit <n>', 'page size (1-200)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .addOption(formatOption())
    .action((opts: { org: string; limit?: string; cursor?: string; format: Format }) =>
      list(
        `${base(opts.org)}${listQuery(opts, ['limit', 'cursor'])}`,
        opts.format,
        WEBHOOK_COLUMNS,
      ),
    );

  webhook
    .command('list-all')
    .description(
      "list every organization's endpoints, oldest first; --state failing or disabled: those in trouble",
    )
    .addOption(
      new Option('--state <state>', 'failing or disabled').choices(['failing', 'disabled']),
    )
    .option('--limit <n>', 'page size (1-200)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .addOption(formatOption())
    .action((opts: { state?: string; limit?: string; cursor?: string; format: Format }) =>
      list(`/webhooks${listQuery(opts, ['state', 'limit', 'cursor'])}`, opts.format, [
        { header: 'org', value: (r) => r.org_id },
        ...WEBHOOK_COLUMNS,
      ]),
    );

  target(webhook.command('get'))
    .description('show an endpoint; prints {endpoint}')
    .action((opts: Target) => admin('GET', one(opts.org, opts.id)));

  target(webhook.command('update'))
    .description('change the URL, the event types or the description')
    .option('--url <url>', 'a new https URL')
    .option('--event <type>', 'the new event types; repeatable', collect, [])
    .option('--description <text>', 'a new description')
    .action(
      (
        opts: Target & { url?: string; event: string[]; description?: string },
        command: Command,
      ) => {
        if (opts.url === undefined && opts.event.length === 0 && opts.description === undefined) {
          command.error(
            'error: nothing to change: give at least one of --url, --event, --description (enable and disable are commands of their own)',
            { exitCode: 2 },
          );
        }
        return admin('PATCH', one(opts.org, opts.id), {
          ...(opts.url === undefined ? {} : { url: opts.url }),
          ...(opts.event.length === 0 ? {} : { events: opts.event }),
          ...(opts.description === undefined ? {} : { description: opts.description }),
        });
      },
    );

  target(webhook.command('enable'))
    .description(
      'enable an endpoint again; events while it was disabled made no deliveries, and those pending when it was disabled ended failed (resend-failed sends them)',
    )
    .action((opts: Target) => admin('PATCH', one(opts.org, opts.id), { enabled: true }));

  target(webhook.command('disable'))
    .description('stop delivering to an endpoint; its pending deliveries end as failed')
    .action((opts: Target) => admin('PATCH', one(opts.org, opts.id), { enabled: false }));

  target(webhook.command('delete'))
    .description('delete an endpoint with its delivery log; prints {deleted: true, id}')
    .action((opts: Target) =>
      admin('DELETE', one(opts.org, opts.id), undefined, { deleted: true, id: opts.id }),
    );

  target(webhook.command('rotate'))
    .description('make a new signing secret; the old one also signs for the grace period')
    .option(
      '--grace <seconds>',
      'how long the old secret keeps signing (default 24 h; 0 for a leaked secret)',
      seconds,
    )
    .action((opts: Target & { grace?: number }) =>
      admin(
        'POST',
        `${one(opts.org, opts.id)}/rotate`,
        opts.grace === undefined ? {} : { grace_seconds: opts.grace },
      ),
    );

  target(webhook.command('test'))
    .description('send a ping delivery to the endpoint')
    .action((opts: Target) => admin('POST', `${one(opts.org, opts.id)}/test`, {}));

  target(webhook.command('deliveries'))
    .description("the endpoint's delivery log, newest first, with every attempt")
    .option('--state <state>', 'only pending, succeeded or failed deliveries')
    .option('--limit <n>', 'page size (1-200)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .addOption(formatOption())
    .action((opts: Target & { state?: string; limit?: string; cursor?: string; format: Format }) =>
      list(
        `${one(opts.org, opts.id)}/deliveries${listQuery(opts, ['state', 'limit', 'cursor'])}`,
        opts.format,
        DELIVERY_COLUMNS,
      ),
    );

  target(webhook.command('delivery'))
    .description('one delivery with its attempts and the exact body sent')
    .requiredOption('--delivery <delivery>', 'delivery id')
    .action((opts: Target & { delivery: string }) =>
      admin('GET', `${one(opts.org, opts.id)}/deliveries/${encodeURIComponent(opts.delivery)}`),
    );

  target(webhook.command('resend'))
    .description('send one delivery again, or every failed delivery since a time')
    .option('--delivery <delivery>', 'the delivery to send again')
    .option('--failed-since <time>', 'resend every failed delivery created at or after this time')
    .action((opts: Target & { delivery?: string; failedSince?: string }) => {
      if ((opts.delivery === undefined) === (opts.failedSince === undefined)) {
        throw new InvalidArgumentError('give either --delivery or --failed-since');
      }
      return opts.delivery !== undefined
        ? admin(
            'POST',
            `${one(opts.org, opts.id)}/deliveries/${encodeURIComponent(opts.delivery)}/resend`,
            {},
          )
        : admin('POST', `${one(opts.org, opts.id)}/resend-failed`, { since: opts.failedSince });
    });
}
