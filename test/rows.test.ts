import test from 'ava';
import { camelRow } from '../lib/rows.js';

test('camelRow renames snake_case columns and keeps their values', (t) => {
  const at = new Date(0);
  const row = camelRow({
    id: 'a',
    org_id: 'o',
    created_at: at,
    last_used_at: null,
    v1_secret: 's',
  });
  t.deepEqual(row, { id: 'a', orgId: 'o', createdAt: at, lastUsedAt: null, v1Secret: 's' });
  t.is(row.createdAt, at);
});
