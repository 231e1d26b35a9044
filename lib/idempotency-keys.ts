/**
 * How an `Idempotency-Key` is recorded: an organization's live keys and test keys keep theirs
 * apart, so that a staging system on a test key and production on a live key, both keyed by order
 * number, never get each other's jobs. A test key's record is named `test <key>`: a key sent over
 * HTTP has no space, so no key a client sends can be taken for another's.
 */
export function recordedKey(key: string, test: boolean): string {
  return test ? `test ${key}` : key;
}

/** The key as its client sent it, for messages. */
export function sentKey(recorded: string): string {
  return recorded.startsWith('test ') ? recorded.slice('test '.length) : recorded;
}
