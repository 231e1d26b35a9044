/**
 * What Linux says about a process, from /proc: resident memory, CPU time, and the TCP ports it
 * listens on. The harness samples these for the stations service and nats-server.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    } catch {
      ticksPerSecond = 100;
    }
    if (!Number.isFinite(ticksPerSecond) || ticksPerSecond <= 0) ticksPerSecond = 100;
  }
  return ticksPerSecond;
}

export interface ProcSample {
  /** Resident set size now, in bytes. */
  rssBytes: number;
  /** The highest resident set size so far (VmHWM), in bytes. */
  peakRssBytes: number;
  /** User plus system CPU time consumed so far, in seconds. */
  cpuSeconds: number;
}

/** Reads a process's memory and CPU time; undefined when it is gone (or this is not Linux). */
export function sampleProcess(pid: number): ProcSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after it are plain.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return {
      rssBytes: kb('VmRSS') * 1024,
      peakRssBytes: kb('VmHWM') * 1024,
      cpuSeconds: (utime + stime) / clockTicks(),
    };
  } catch {
    return undefined;
  }
}

/** CPU used between two samples taken `wallMs` apart, as a share of one core (1 = a full core). */
export function coresUsed(before: ProcSample, after: ProcSample, wallMs: number): number {
  return wallMs > 0 ? (after.cpuSeconds - before.cpuSeconds) / (wallMs / 1000) : Number.NaN;
}

/** The TCP ports a process listens on (IPv4 and IPv6), from its socket descriptors. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEX_IP:HEX_PORT, st 0A is LISTEN, inode is the tenth column.
      if (cols[3] !== '0A' || !cols[9] || !inodes.has(cols[9])) continue;
      const port = Number.parseInt(cols[1]?.split(':')[1] ?? '', 16);
      if (Number.isInteger(port)) ports.add(port);
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/**
 * Spool's own CPU time spent on each unit of work between start and {@link CpuMeter.perItemMs}:
 * the process's user plus system time (from /proc) divided by the items done, in milliseconds.
 * It is the figure a noisy machine disturbs least, since waiting costs no CPU.
 */
export interface CpuMeter {
  perItemMs(items: number): number;
}

export function startCpuMeter(pid: number | undefined): CpuMeter {
  const before = pid ? sampleProcess(pid) : undefined;
  return {
    perItemMs(items) {
      const after = pid ? sampleProcess(pid) : undefined;
      if (!before || !after || items <= 0) return Number.NaN;
      return ((after.cpuSeconds - before.cpuSeconds) * 1000) / items;
    },
  };
}
