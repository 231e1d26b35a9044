/**
 * Group commit's grouping (lib/group-commit.ts), with a commit that the test finishes by hand and
 * a wait the test ends by hand: what goes together, and when a group waits for company.
 */
import test from 'ava';
import { GroupCommit, type Outcome } from '../lib/group-commit.js';

interface Gate {
  open(): void;
  promise: Promise<void>;
}

function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, promise };
}

/** A group commit whose commits and waits the test ends, recording each group and each wait. */
function harness(gatherMs: number) {
  const groups: string[][] = [];
  const commits: Gate[] = [];
  const waits: Array<{ ms: number; gate: Gate }> = [];
  const groupCommit = new GroupCommit<string, string>(
    async (items): Promise<Outcome<string>[]> => {
      groups.push(items);
      const g = gate();
      commits.push(g);
      await g.promise;
      return items.map((item) => ({ ok: item.toUpperCase() }));
    },
    4,
    {
      gatherMs,
      wait: (ms) => {
        const g = gate();
        waits.push({ ms, gate: g });
        return g.promise;
      },
    },
  );
  return { groupCommit, groups, commits, waits };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test('a lone item goes at once, without waiting for company', async (t) => {
  const { groupCommit, groups, commits, waits } = harness(2);
  const answer = groupCommit.submit('a');
  await settle();
  t.deepEqual(groups, [['a']]);
  commits[0]?.open();
  t.is(await answer, 'A');
  t.deepEqual(waits, []);
});

test('items submitted in the same turn go as one group, even on a quiet process', async (t) => {
  const { groupCommit, groups, commits, waits } = harness(2);
  // As a station's `received` and `result` that came as one report are applied.
  const answers = Promise.all([groupCommit.submit('received'), groupCommit.submit('printed')]);
  await settle();
  t.deepEqual(groups, [['received', 'printed']]);
  commits[0]?.open();
  t.deepEqual(await answers, ['RECEIVED', 'PRINTED']);
  t.deepEqual(waits, []);
});

test('items that came while a group committed wait for company, then go together', async (t) => {
  const { groupCommit, groups, commits, waits } = harness(2);
  const answers = [groupCommit.submit('a')];
  await settle();
  answers.push(groupCommit.submit('b'));
  commits[0]?.open();
  await settle();
  // 'b' came during the first commit: the load is more than one at a time, so its group waits.
  t.deepEqual(groups, [['a']]);
  t.deepEqual(
    waits.map((w) => w.ms),
    [2],
  );
  answers.push(groupCommit.submit('c'), groupCommit.submit('d'));
  waits[0]?.gate.open();
  await settle();
  t.deepEqual(groups, [['a'], ['b', 'c', 'd']]);
  commits[1]?.open();
  t.deepEqual(await Promise.all(answers), ['A', 'B', 'C', 'D']);
  // Quiet again: the next item goes at once.
  const later = groupCommit.submit('e');
  await settle();
  t.deepEqual(groups.at(-1), ['e']);
  commits[2]?.open();
  t.is(await later, 'E');
  t.is(waits.length, 1);
});

test('a full group does not wait', async (t) => {
  const { groupCommit, groups, commits, waits } = harness(2);
  const answers = [groupCommit.submit('a')];
  await settle();
  for (const item of ['b', 'c', 'd', 'e', 'f']) answers.push(groupCommit.submit(item));
  commits[0]?.open();
  await settle();
  t.deepEqual(groups, [['a'], ['b', 'c', 'd', 'e']]);
  commits[1]?.open();
  await settle();
  // 'f' was left over from a full group: it waits for company as any group under load does.
  t.is(waits.length, 1);
  waits[0]?.gate.open();
  await settle();
  t.deepEqual(groups.at(-1), ['f']);
  commits[2]?.open();
  t.deepEqual(await Promise.all(answers), ['A', 'B', 'C', 'D', 'E', 'F']);
});

test('without gatherMs the next group goes as soon as the one before has committed', async (t) => {
  const { groupCommit, groups, commits, waits } = harness(0);
  const answers = [groupCommit.submit('a')];
  await settle();
  answers.push(groupCommit.submit('b'));
  commits[0]?.open();
  await settle();
  t.deepEqual(groups, [['a'], ['b']]);
  commits[1]?.open();
  t.deepEqual(await Promise.all(answers), ['A', 'B']);
  t.deepEqual(waits, []);
});
