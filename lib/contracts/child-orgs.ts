/**
 * The bounds of a platform's child organizations (DESIGN §5), which the accounts service enforces
 * and the gateway's schemas state. Plain data with no imports.
 */

/** Characters of a child organization's name, after trimming. */
export const MAX_CHILD_NAME_LENGTH = 200;
/** Characters of the parent's reference for a child (a customer number, say). */
export const MAX_CHILD_REFERENCE_LENGTH = 200;
