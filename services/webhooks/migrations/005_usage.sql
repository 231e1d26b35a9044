-- Deliveries per organization and UTC day (docs/platforms.md, "Usage"), kept by the usage rollup
-- (usage-rollup.ts) from the delivery log after it is written, so they outlive the log's
-- retention. A delivery counts on the day it succeeded.
CREATE TABLE IF NOT EXISTS webhook_usage_days (
  org_id UUID NOT NULL,
  day DATE NOT NULL,
  deliveries INT8 NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, day)
);

-- The rollup's mark (the time it has counted deliveries up to) and the lease that lets one
-- replica at a time run it.
CREATE TABLE IF NOT EXISTS webhook_usage_rollups (
  name TEXT PRIMARY KEY,
  through TIMESTAMPTZ,
  lease_holder UUID,
  lease_until TIMESTAMPTZ
);
