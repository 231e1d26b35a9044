/**
 * The benchmark's split of the machine's CPU (bench/machine-cpu.ts) counts a server with the
 * processes it started: PostgreSQL's backends are children of the postmaster, and one that exits
 * during a run must still count, through the parent that reaped it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import test from 'ava';
import { machineCpuSeconds, treeCpuSeconds } from '../bench/proc.js';

/** A child that spends `ms` of its own CPU time, says so, and exits when its stdin closes. */
function burner(ms: number) {
  const code = `const until = ${ms * 1000};
    while (process.cpuUsage().user < until) {}
    process.stdout.write('spent\\n');
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));`;
  return spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
}

test('a process tree counts its live children and those it has reaped', async (t) => {
  const self = process.pid;
  const treeBefore = treeCpuSeconds([self]);
  const machineBefore = machineCpuSeconds();
  if (treeBefore === undefined || machineBefore === undefined) {
    t.fail('/proc is not readable here');
    return;
  }
  const child = burner(400);
  await once(child.stdout, 'data');
  // Alive: counted as a child of this process.
  const whileAlive = treeCpuSeconds([self]) as number;
  t.true(whileAlive - treeBefore >= 0.35, `live child counted: ${whileAlive - treeBefore} s`);
  // Not counted in a tree it does not belong to.
  const alone = treeCpuSeconds([child.pid as number]) as number;
  t.true(alone >= 0.35 && alone < whileAlive, `the child's own tree: ${alone} s`);

  const exited = once(child, 'exit');
  child.stdin.end();
  await exited;
  // Reaped: its time moved to this process's children's time, and still counts.
  const afterExit = treeCpuSeconds([self]) as number;
  t.true(afterExit - treeBefore >= 0.35, `reaped child counted: ${afterExit - treeBefore} s`);
  // The machine as a whole spent at least as much.
  t.true((machineCpuSeconds() as number) - machineBefore >= 0.35);
  // A process that is gone has no tree.
  t.is(treeCpuSeconds([child.pid as number]), undefined);
});
