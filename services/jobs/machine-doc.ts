/** Renders the transition table as the Markdown table docs/jobs.md carries (a test compares them). */
import { TRANSITIONS } from './machine.js';

const TRIGGER_TEXT: Record<string, string> = {
  cancel: '`POST …/cancel` (jobs:write)',
  retry: '`POST …/retry` (jobs:write)',
  received: 'the agent has the job and its document',
  printed: 'the station reports it printed',
  failed: 'the station reports it failed (`status_detail` says why)',
  due: 'its `schedule_at` has come (the scheduler)',
  expire: 'it waited undelivered longer than `expire_after` (detail `expired`)',
  printer_deleted: 'the operator deleted its printer or station (`status_detail` says which)',
  route: 'a pool job waiting for a member is given one (detail `routed to <printer id>`)',
  failover:
    'its pool member has not been able to print for the pool’s `failover_after` (another member takes it)',
  move: '`POST …/move` (jobs:write)',
};

export function transitionTable(): string {
  const rows = TRANSITIONS.map((t) => {
    const also = [
      t.event ? `webhook \`${t.event}\`` : '',
      t.dispatch === 'offer'
        ? t.newAttempt
          ? 'sent to the station again as a new attempt'
          : 'sent to the station'
        : '',
      t.dispatch === 'withdraw' ? 'withdrawn from the station unless printing has begun' : '',
      t.dispatch === 'reroute'
        ? 'withdrawn from the station it was offered to, and sent to the new printer’s'
        : '',
      t.dispatch === null && t.trigger === 'move'
        ? 'goes to the new printer when it is queued'
        : '',
    ].filter(Boolean);
    return `| ${t.from.join(', ')} | ${TRIGGER_TEXT[t.trigger]} | ${t.to} | ${also.join('; ') || '—'} |`;
  });
  return ['| From | Trigger | To | Also |', '|---|---|---|---|', ...rows].join('\n');
}
