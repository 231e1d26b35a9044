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

/**
 * The machine's busy CPU time so far, every process and the kernel's own work included, from the
 * first line of /proc/stat (user, nice, system, irq, softirq and steal; guest time is within
 * user), in seconds; undefined where there is no /proc/stat.
 */
export function machineCpuSeconds(): number | undefined {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const f = first.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return (user + nice + system + irq + softirq + steal) / clockTicks();
  } catch {
    return undefined;
  }
}

/** Every process's parent and CPU time (its own and its reaped children's), read once. */
export interface ProcessTable {
  parent: Map<number, number>;
  seconds: Map<number, number>;
}

/** Reads /proc once for {@link treeCpuSeconds}; undefined where there is no /proc. */
export function processTable(): ProcessTable | undefined {
  const parent = new Map<number, number>();
  const seconds = new Map<number, number>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pid = Number(name);
      parent.set(pid, Number(fields[1]));
      const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
      seconds.set(pid, ticks / clockTicks());
    } catch {
      // exited meanwhile
    }
  }
  return { parent, seconds };
}

/**
 * CPU time of each process in `roots` and of every process it started, in seconds: each live
 * process's own time and the time of the children it has reaped (`cutime`, `cstime`), so a
 * PostgreSQL backend that exits between two readings still counts, through the postmaster.
 * Undefined when a root is gone. Several trees taken at one moment can share one `table`.
 */
export function treeCpuSeconds(
  roots: readonly number[],
  table: ProcessTable | undefined = processTable(),
): number | undefined {
  if (!table) return undefined;
  const { parent, seconds } = table;
  if (roots.some((pid) => !seconds.has(pid))) return undefined;
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid, depth = 0; p && depth < 64; depth++) {
      if (roots.includes(p)) return true;
      p = parent.get(p);
    }
    return false;
  };
  let total = 0;
  for (const [pid, s] of seconds) if (inTree(pid)) total += s;
  return total;
}

/** Every live process `root` started, and those they started, deepest first. */
export function descendants(
  root: number,
  table: ProcessTable | undefined = processTable(),
): number[] {
  if (!table) return [];
  const children = new Map<number, number[]>();
  for (const [pid, parent] of table.parent) {
    const siblings = children.get(parent);
    if (siblings) siblings.push(pid);
    else children.set(parent, [pid]);
  }
  const found: number[] = [];
  const visit = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      visit(child);
      found.push(child);
    }
  };
  visit(root);
  return found;
}
