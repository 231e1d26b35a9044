/**
 * `spool admin station diagnose`: a linked agent's versions, printers and last log lines, as the
 * operator API answers them (docs/agent.md, "Diagnosis"), printed for a person to read.
 */
import type { Command } from 'commander';
import { formatLogLine } from '../agent/log-format.js';
import type { DiagnosisView } from '../lib/contracts/diagnosis-view.js';
import type { AdminContext } from './admin.js';
import { enc } from './admin-options.js';
import { renderTable } from './table.js';

/** The report as a person reads it: versions, a table of printers, then the log lines. */
export function renderDiagnosis(d: DiagnosisView): string {
  const versions = Object.entries(d.versions)
    .map(([name, version]) => `  ${name}: ${version}`)
    .join('\n');
  const printers = renderTable(
    [
      { header: 'name', value: (p) => p.name },
      { header: 'backend', value: (p) => p.backend },
      { header: 'status', value: (p) => p.status },
      { header: 'held', value: (p) => p.held_jobs },
      { header: 'detail', value: (p) => [p.detail, p.raw].filter((s) => s !== '').join('; ') },
    ],
    d.printers,
  );
  const lines = d.log_lines.map((line) => formatLogLine(line)).join('');
  return [
    `versions:\n${versions}\n`,
    `printers:\n${printers.replace(/^/gm, '  ')}`,
    `log (last ${d.log_lines.length} lines${d.truncated ? ', some left out to keep the report within 1 MiB' : ''}):\n${lines}`,
  ].join('\n');
}

export function addDiagnoseCommand(station: Command, ctx: AdminContext): void {
  station
    .command('diagnose')
    .description(
      "ask a linked station's agent for its versions, printers and last log lines; never a secret",
    )
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--id <station>', 'station id')
    .option('--lines <n>', 'how many of its last log lines (1 to 200; default 200)')
    .option('--json', 'print the API answer, {diagnosis}')
    .action(async (opts: { org: string; id: string; lines?: string; json?: boolean }, command) => {
      const lines = opts.lines === undefined ? undefined : Number(opts.lines);
      if (lines !== undefined && !(Number.isInteger(lines) && lines >= 1 && lines <= 200)) {
        (command as Command).error('error: --lines must be a whole number from 1 to 200', {
          exitCode: 2,
        });
      }
      const client = await ctx.client();
      const answer = (await client.request(
        'POST',
        `/orgs/${enc(opts.org)}/stations/${enc(opts.id)}/diagnose`,
        lines === undefined ? {} : { log_lines: lines },
      )) as { diagnosis: DiagnosisView };
      process.stdout.write(
        opts.json ? `${JSON.stringify(answer, null, 2)}\n` : renderDiagnosis(answer.diagnosis),
      );
    });
}
