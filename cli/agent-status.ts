/** `spool agent status`: whether the agent runs and is connected, as its status file says. */

import { type AgentStatus, readStatus, STATUS_HEARTBEAT_MS } from '../agent/status.js';
import type { Env } from '../lib/config.js';
import { isProcessAlive } from '../lib/processes.js';
import { type AgentCommonFlags, agentSettings } from './agent-settings.js';

/** What `status` found: the file, and whether its agent still runs. */
export interface StatusReport {
  state_dir: string;
  running: boolean;
  /** A running agent that has not rewritten its status for three heartbeats. */
  stale: boolean;
  status: AgentStatus | null;
}

/** Exit codes of `spool agent status`, as systemctl's: 0 connected, 2 running without link, 3 not running. */
export const STATUS_EXIT = { connected: 0, disconnected: 2, notRunning: 3 } as const;

/**
 * The exit code of a report. An agent whose status has gone stale (it stopped writing it: stuck)
 * says nothing current about its link, so it does not count as connected, whatever it last wrote:
 * a monitor that checks the exit code must not miss it.
 */
export function statusExit(report: StatusReport): number {
  if (!report.running) return STATUS_EXIT.notRunning;
  return report.status?.link.connected && !report.stale
    ? STATUS_EXIT.connected
    : STATUS_EXIT.disconnected;
}

/** `spool agent status`: the status file of the state directory, and whether its agent runs. */
export async function agentStatus(flags: AgentCommonFlags, env: Env): Promise<StatusReport> {
  const s = await agentSettings(flags, env);
  const status = (await readStatus(s.stateDir)) ?? null;
  const running = status !== null && status.stopped_at === undefined && isProcessAlive(status.pid);
  const stale =
    running &&
    status !== null &&
    Date.now() - Date.parse(status.updated_at) > 3 * STATUS_HEARTBEAT_MS;
  return { state_dir: s.stateDir, running, stale, status };
}

function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} days ago`;
}

function when(iso: string): string {
  return `${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')} (${ago(iso)})`;
}

/** The status as a person reads it. */
export function formatStatus(report: StatusReport): string {
  const { status } = report;
  if (!status) {
    return `not running: no agent has run with the state directory ${report.state_dir} (an agent with another: give its --config or --state-dir)\n`;
  }
  const out: string[] = [];
  if (status.stopped_at) {
    out.push(`not running: stopped ${when(status.stopped_at)}`);
  } else if (!report.running) {
    out.push(
      `not running: pid ${status.pid} is gone; it ended without stopping cleanly, last seen ${when(status.updated_at)}`,
    );
  } else {
    out.push(
      `running: pid ${status.pid}, version ${status.agent_version}, since ${when(status.started_at)}`,
    );
    if (report.stale) {
      out.push(
        `warning: the status was last written ${when(status.updated_at)}; the agent may be stuck`,
      );
    }
  }
  const link = status.link;
  // The name its owner gave it, and the id the API and the console show beside it.
  const stationOf = (l: typeof link) =>
    l.station_id === undefined
      ? ''
      : l.station_name
        ? `, station "${l.station_name}" (${l.station_id})`
        : `, station ${l.station_id}`;
  if (report.running) {
    out.push(
      link.connected
        ? `link: ${report.stale ? 'last known ' : ''}connected to ${link.server ?? status.server} since ${when(link.since)}${stationOf(link)}${link.wrong_region ? ` (region ${link.wrong_region.server}; the station's home region is ${link.wrong_region.home})` : ''}`
        : `link: not connected (to ${status.server}) since ${when(link.since)}`,
    );
  }
  out.push(`state directory: ${report.state_dir}`);
  out.push(report.running ? 'printers:' : 'printers (when it last ran):');
  const width = Math.max(4, ...status.printers.map((p) => p.name.length));
  for (const p of status.printers) {
    // An agent of an earlier version wrote no count.
    const waiting = p.jobs_waiting ?? 0;
    const jobs = waiting === 0 ? '' : `  (${waiting} job${waiting === 1 ? '' : 's'} waiting)`;
    out.push(
      `  ${p.name.padEnd(width)}  ${p.detail ? `${p.status.padEnd(12)}  ${p.detail}` : p.status}${jobs}`,
    );
  }
  if (status.printers.length === 0) out.push('  (none)');
  out.push(
    `jobs today (${status.jobs_today.date}): ${status.jobs_today.printed} printed, ${status.jobs_today.failed} failed`,
  );
  out.push(
    status.last_error
      ? `last error: ${when(status.last_error.at)}: ${status.last_error.message.trim()}`
      : 'last error: none',
  );
  const update = status.update;
  if (update && update.state !== 'current') {
    const words: Record<string, string> = {
      downloading: `downloading ${update.version}`,
      failed: `${update.version} failed: ${update.detail}`,
      rolled_back: `${update.version} rolled back: ${update.detail}`,
    };
    out.push(`update: ${words[update.state] ?? `${update.state} ${update.version}`}`);
  }
  return `${out.join('\n')}\n`;
}
