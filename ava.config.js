// The IPP tests run in a private network namespace of their own, after the others (test/run.ts):
// SPOOL_TEST_PHASE=ipp selects them, and only them.
const ipp = process.env.SPOOL_TEST_PHASE === 'ipp';

export default {
  files: ipp ? ['test/ipp/**/*.test.ts'] : ['test/**/*.test.ts', '!test/ipp/**'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx'],
  timeout: '2m',
  workerThreads: false,
  concurrency: 2,
};
