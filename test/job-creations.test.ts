import test from 'ava';
import type { JobsClient } from '../gateway/clients.js';
import { JobCreations } from '../gateway/job-creations.js';
import {
  CreateJobRequest,
  type CreateJobsRequest,
  type CreateJobsResponse,
  Job,
} from '../gen/spool/v1/jobs.js';
import { SpoolError } from '../lib/errors.js';

/** A jobs service whose calls the test answers by hand, one at a time. */
function heldJobs() {
  const calls: Array<{
    request: CreateJobsRequest;
    answer(res: CreateJobsResponse): void;
    fail(err: unknown): void;
  }> = [];
  const single: CreateJobRequest[] = [];
  const client = {
    createJobs: (request: CreateJobsRequest) =>
      new Promise<CreateJobsResponse>((answer, fail) => calls.push({ request, answer, fail })),
    createJob: async (request: CreateJobRequest) => {
      single.push(request);
      return { job: Job.fromPartial({ id: 'fetched', reference: request.reference }) };
    },
  } as unknown as JobsClient;
  return { client, calls, single };
}

const asked = (reference: string) => CreateJobRequest.fromPartial({ reference });
const created = (request: CreateJobsRequest): CreateJobsResponse => ({
  results: request.jobs.map((item) => ({
    job: Job.fromPartial({ id: `job-${item.request?.reference}` }),
  })),
});
const tick = () => new Promise((resolve) => setImmediate(resolve));

test('creations go at once until the calls in flight are full; those that wait go together, each answered with its own job', async (t) => {
  const { client, calls } = heldJobs();
  const creations = new JobCreations(client, 2);
  const answers = Array.from({ length: 7 }, (_, i) => creations.create(asked(`r${i}`)));
  await tick();
  t.deepEqual(
    calls.map((c) => c.request.jobs.map((j) => j.request?.reference)),
    [['r0'], ['r1']],
    'a creation waited while a call could still go',
  );

  calls[0]?.answer(created(calls[0].request));
  await tick();
  t.deepEqual(
    calls[2]?.request.jobs.map((j) => j.request?.reference),
    ['r2', 'r3', 'r4', 'r5', 'r6'],
  );
  calls[1]?.answer(created(calls[1].request));
  calls[2]?.answer(created(calls[2].request));
  t.deepEqual(
    (await Promise.all(answers)).map((job) => job.id),
    ['job-r0', 'job-r1', 'job-r2', 'job-r3', 'job-r4', 'job-r5', 'job-r6'],
  );
  t.is(calls.length, 3);
});

test('a creation the jobs service refuses fails alone with its error; a call that fails fails its creations once', async (t) => {
  const { client, calls } = heldJobs();
  const creations = new JobCreations(client, 1);
  const first = creations.create(asked('first'));
  const rest = ['a', 'b', 'c'].map((r) => creations.create(asked(r)));
  await tick();
  calls[0]?.fail(new SpoolError('unavailable', 'the jobs service is unavailable; try again'));
  await t.throwsAsync(first, { message: /unavailable/ });
  await tick();

  const call = calls[1];
  if (!call) return t.fail('the waiting creations were not sent');
  call.answer({
    results: [
      { job: Job.fromPartial({ id: 'job-a' }) },
      {
        error: {
          code: 'invalid',
          message: 'printer_id names no printer of this organization',
          param: 'printer_id',
          retryAfter: 0,
        },
      },
      { job: Job.fromPartial({ id: 'job-c' }) },
    ],
  });
  const [a, b, c] = await Promise.allSettled(rest);
  t.deepEqual(a, { status: 'fulfilled', value: Job.fromPartial({ id: 'job-a' }) });
  t.deepEqual(c, { status: 'fulfilled', value: Job.fromPartial({ id: 'job-c' }) });
  if (b?.status !== 'rejected') return t.fail('the refused creation was answered with a job');
  t.true(b.reason instanceof SpoolError);
  t.is(b.reason.code, 'invalid');
  t.is(b.reason.param, 'printer_id');
  t.is(b.reason.httpStatus, 400);
  t.is(calls.length, 2, 'a creation was sent again after its call failed');
});

test('a creation whose content is fetched from a URL goes alone', async (t) => {
  const { client, calls, single } = heldJobs();
  const creations = new JobCreations(client);
  const job = await creations.create(
    CreateJobRequest.fromPartial({
      reference: 'from-url',
      uri: { uri: 'https://example.com/a.pdf', contentType: 'application/pdf' },
    }),
  );
  t.is(job.id, 'fetched');
  t.is(single.length, 1);
  t.is(calls.length, 0);
});
