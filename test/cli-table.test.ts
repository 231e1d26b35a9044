/** Tables of `--format table`: rows printed one at a time line up when a column says how wide. */
import test from 'ava';
import { renderTable } from '../cli/table.js';

test('a column with a minimum width lines up rows rendered one at a time, as jobs watch prints them', (t) => {
  const columns = [
    { header: 'status', value: (r: { status: string }) => r.status, minWidth: 9 },
    { header: 'detail', value: () => 'paper jam' },
  ];
  const rowOf = (status: string) => renderTable(columns, [{ status }]).split('\n')[1] ?? '';
  const at = ['sent', 'printed', 'cancelled'].map((s) => rowOf(s).indexOf('paper jam'));
  t.deepEqual(at, [11, 11, 11]);
  // Without it, each table is as wide as its own cells.
  const loose = [{ header: 'status', value: (r: { status: string }) => r.status }, columns[1]];
  const sent = renderTable(loose as typeof columns, [{ status: 'sent' }]).split('\n')[1] ?? '';
  t.is(sent.indexOf('paper jam'), 8);
});
