/**
 * Where the machine's CPU went during a measured run: all of it (from /proc/stat), and the parts
 * of Spool's processes, PostgreSQL and nats-server (each with the processes it started), per item
 * of work; what is left is the harness (the load, the simulated agents, the webhook receivers)
 * and the kernel's own work. Beside it, the CPU time per item the machine's cores have to give at
 * a target's rate: when a run costs more than that, the target cannot be met on these cores
 * however the work is spread over them, and the ratio says by how much the whole machine's CPU
 * per item has to fall.
 */
import os from 'node:os';
import { machineCpuSeconds, processTable, treeCpuSeconds } from './proc.js';
import { type Figure, figure } from './report/figures.js';
import { finiteMedian } from './stats.js';

export interface CpuParts {
  spool: readonly number[];
  postgres: number | undefined;
  nats: number | undefined;
}

/** One run's CPU per item, in milliseconds; NaN where /proc could not say. */
export interface MachineCpuSplit {
  machine: number;
  spool: number;
  postgres: number;
  nats: number;
  /** The harness and the kernel: the machine less the three above. */
  rest: number;
  /** The machine's busy share of all its cores over the run, 0 to 1. */
  busy: number;
}

export interface MachineCpuMeter {
  perItem(items: number): MachineCpuSplit;
}

/** The parts of `spool dev` and of the servers the harness started. */
export function devParts(servers: {
  spoolPid: number | undefined;
  postgresPid: number | undefined;
  natsPid: number | undefined;
}): CpuParts {
  return {
    spool: servers.spoolPid === undefined ? [] : [servers.spoolPid],
    postgres: servers.postgresPid,
    nats: servers.natsPid,
  };
}

export function startMachineCpuMeter(parts: CpuParts): MachineCpuMeter {
  const read = () => {
    // One reading of /proc for the three trees.
    const table = processTable();
    const tree = (pids: readonly number[]) =>
      pids.length ? treeCpuSeconds(pids, table) : undefined;
    return {
      at: performance.now(),
      machine: machineCpuSeconds(),
      spool: tree(parts.spool),
      postgres: tree(parts.postgres === undefined ? [] : [parts.postgres]),
      nats: tree(parts.nats === undefined ? [] : [parts.nats]),
    };
  };
  const before = read();
  return {
    perItem(items) {
      const after = read();
      const per = (key: 'machine' | 'spool' | 'postgres' | 'nats') => {
        const a = after[key];
        const b = before[key];
        return a === undefined || b === undefined || items <= 0
          ? Number.NaN
          : ((a - b) * 1000) / items;
      };
      const machine = per('machine');
      const spool = per('spool');
      const postgres = per('postgres');
      const nats = per('nats');
      const wallS = (after.at - before.at) / 1000;
      const busy =
        after.machine === undefined || before.machine === undefined || wallS <= 0
          ? Number.NaN
          : (after.machine - before.machine) / (wallS * os.cpus().length);
      return { machine, spool, postgres, nats, rest: machine - spool - postgres - nats, busy };
    },
  };
}

/** The runs' splits, one array per part, as the scenarios keep them in their details. */
export type MachineCpuRows = { [K in keyof MachineCpuSplit]: number[] };

export function machineCpuRows(): MachineCpuRows {
  return { machine: [], spool: [], postgres: [], nats: [], rest: [], busy: [] };
}

export function addSplit(rows: MachineCpuRows, split: MachineCpuSplit): void {
  for (const key of Object.keys(rows) as Array<keyof MachineCpuSplit>) rows[key].push(split[key]);
}

/** The split as the log line gives it. */
export function splitText(split: MachineCpuSplit): string {
  const ms = (v: number) => v.toFixed(2);
  return (
    `machine ${ms(split.machine)} ms (Spool ${ms(split.spool)}, PostgreSQL ${ms(split.postgres)}, ` +
    `nats-server ${ms(split.nats)}, the rest ${ms(split.rest)}; ${Math.round(split.busy * 100)} % busy)`
  );
}

/**
 * The figure: the whole machine's CPU per item, beside the cores' time per item at the target
 * rate (`target.rates`, run by run, in items a second), with the medians of the split as its note.
 */
export function machineCpuFigure(
  scenario: string,
  item: string,
  rows: MachineCpuRows,
  target: { text: string; rates: number[] },
): Figure {
  const cores = os.cpus().length;
  const f = figure(scenario, `machine CPU per ${item}, every process`, 'ms', rows.machine, {
    label: `${cores} cores' time per ${item} at ${target.text}`,
    unit: 'ms',
    values: target.rates.map((rate) => (cores * 1000) / rate),
  });
  const ms = (values: number[]) => {
    const m = finiteMedian(values);
    return Number.isFinite(m) ? m.toFixed(2) : 'not known';
  };
  f.note =
    `of it Spool ${ms(rows.spool)}, PostgreSQL ${ms(rows.postgres)}, nats-server ${ms(rows.nats)}, ` +
    `the harness and the kernel ${ms(rows.rest)} ms; machine ${Math.round(finiteMedian(rows.busy) * 100)} % busy`;
  return f;
}
