/**
 * The release public key built into the packaged agent (scripts/build-agent.ts defines
 * `SPOOL_RELEASE_KEY` from its `--signing-key` or `--release-key`): the only key whose signed
 * releases it installs. Empty, or absent when run from a checkout: the agent does not update itself.
 */
declare const SPOOL_RELEASE_KEY: string | undefined;

export function builtInReleaseKey(): string | undefined {
  return typeof SPOOL_RELEASE_KEY === 'string' && SPOOL_RELEASE_KEY !== ''
    ? SPOOL_RELEASE_KEY
    : undefined;
}
