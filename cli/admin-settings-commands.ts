/** `spool admin settings …`: the installation-wide settings. */
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import type { AdminContext } from './admin.js';
import { wholeDays } from './flags.js';

/** `spool admin settings get` and `settings set`. */
export function addSettingsCommands(adminCommand: Command, ctx: AdminContext): void {
  const { admin } = ctx;
  const settings = adminCommand.command('settings').description('installation-wide settings');
  settings
    .command('get')
    .description('show the settings; prints {settings}')
    .action(() => admin('GET', '/settings'));
  settings
    .command('set')
    .description('change the settings given; prints {settings}')
    .addOption(
      new Option(
        '--job-document-retention-days <days>',
        'days a job document is kept after it finishes',
      ).argParser(wholeDays),
    )
    .addOption(
      new Option('--upload-retention-days <days>', 'days an upload is kept').argParser(wholeDays),
    )
    .addOption(
      new Option(
        '--webhook-delivery-retention-days <days>',
        'days a finished webhook delivery stays in the delivery log',
      ).argParser(wholeDays),
    )
    .addOption(
      new Option('--audit-retention-days <days>', 'days an audit log entry is kept').argParser(
        wholeDays,
      ),
    )
    .option('--notice <text>', 'a notice on the public status page ("" for none)')
    .option('--pricing-file <file>', 'a JSON file of the public prices in cents ("" to withdraw)')
    .option('--downloads-file <file>', 'a JSON file of the latest agent release per platform')
    .action(
      async (
        opts: {
          jobDocumentRetentionDays?: number;
          uploadRetentionDays?: number;
          webhookDeliveryRetentionDays?: number;
          auditRetentionDays?: number;
          notice?: string;
          pricingFile?: string;
          downloadsFile?: string;
        },
        command: Command,
      ) => {
        // The connection's flags (--url, --token) change nothing.
        const changes = command.options.filter(
          (o) => !['url', 'token'].includes(o.attributeName()),
        );
        if (changes.every((o) => opts[o.attributeName() as keyof typeof opts] === undefined)) {
          const flags = changes.map((o) => o.long).join(', ');
          command.error(`error: nothing to change: give at least one of ${flags}`, { exitCode: 2 });
        }
        const jsonFile = async (file: string | undefined, name: string) => {
          if (file === undefined) return {};
          if (file === '') return { [name]: null };
          const text = await readFile(file, 'utf8');
          try {
            return { [name]: JSON.parse(text) };
          } catch (err) {
            throw new Error(`${file} is not JSON: ${(err as Error).message}`);
          }
        };
        return admin('PATCH', '/settings', {
          ...(opts.jobDocumentRetentionDays === undefined
            ? {}
            : { job_document_retention_days: opts.jobDocumentRetentionDays }),
          ...(opts.uploadRetentionDays === undefined
            ? {}
            : { upload_retention_days: opts.uploadRetentionDays }),
          ...(opts.webhookDeliveryRetentionDays === undefined
            ? {}
            : { webhook_delivery_retention_days: opts.webhookDeliveryRetentionDays }),
          ...(opts.auditRetentionDays === undefined
            ? {}
            : { audit_retention_days: opts.auditRetentionDays }),
          ...(opts.notice === undefined ? {} : { notice: opts.notice === '' ? null : opts.notice }),
          ...(await jsonFile(opts.pricingFile, 'pricing')),
          ...(await jsonFile(opts.downloadsFile, 'downloads')),
        });
      },
    );
}
