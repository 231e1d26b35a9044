/**
 * What a station's enrollment code may be (docs/platforms.md, "Enrollment codes"): the stations
 * service keeps codes by these rules, the gateway's schemas and OpenAPI documents state them, and
 * the gateway and the station link limit how often one client address may try a code. Plain data
 * with no imports, so the console reads the same.
 */

/** Seconds a code can be used when its creation does not say (24 hours). */
export const DEFAULT_ENROLLMENT_EXPIRES_IN_S = 24 * 60 * 60;
/** The fewest and most seconds a code may be made to last: a minute to 30 days. */
export const MIN_ENROLLMENT_EXPIRES_IN_S = 60;
export const MAX_ENROLLMENT_EXPIRES_IN_S = 30 * 24 * 60 * 60;

/** The longest name of a station, in characters (as for a station made directly). */
export const MAX_STATION_NAME_LENGTH = 200;

/**
 * Codes one client address may try a minute, at `POST /v1/public/enroll` (across every gateway
 * replica) and at the station link's `Enroll` (per stations replica): ten tries of a code out of
 * 2^50 leave nothing to guess.
 */
export const ENROLL_ATTEMPTS_PER_MINUTE = 10;

/** An example code, as codes are written: `XXXX-XXXX-XX`, without 0, O, 1 or I. */
export const EXAMPLE_ENROLLMENT_CODE = 'K7QM-3XWD-9P';
