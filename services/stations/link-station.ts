/** A station as its link knows it, and a link as the database records it. */

/** The station a device token belongs to, as the link needs it. */
export interface LinkStation {
  id: string;
  name: string;
  orgId: string;
  revoked: boolean;
  /** Its home region. */
  region: string;
}

/** A station as a link's re-read finds it: with the link the database records it on. */
export interface HeldStation extends LinkStation {
  online: boolean;
  linkId: string;
}

/** A link recorded open: its station and its id. */
export interface OpenLink {
  station: LinkStation;
  linkId: string;
}

export function toLinkStation(
  id: string,
  name: string,
  row: { org_id: string; revoked_at: Date | null; region: string },
): LinkStation {
  return { id, name, orgId: row.org_id, revoked: row.revoked_at !== null, region: row.region };
}
