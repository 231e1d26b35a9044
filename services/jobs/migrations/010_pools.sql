-- Pools of printers (docs/jobs.md, "Pools and routing"). A pool job names its pool; its
-- printer_id and station_id are the member chosen, NULL until one is.
CREATE TABLE IF NOT EXISTS pools (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  name TEXT NOT NULL,
  strategy TEXT NOT NULL,
  failover_after INT4 NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS pools_org_created ON pools (org_id, created_at, id);

-- Each member in its place in the pool. `unready_since` is when the jobs service last saw the
-- printer become unable to take a pool job (its station offline, its status other than ready),
-- NULL while it can: failover moves a job off a member unready for the pool's failover_after.
CREATE TABLE IF NOT EXISTS pool_members (
  pool_id UUID NOT NULL,
  org_id UUID NOT NULL,
  printer_id UUID NOT NULL,
  position INT4 NOT NULL,
  unready_since TIMESTAMPTZ,
  PRIMARY KEY (pool_id, printer_id)
);

CREATE INDEX IF NOT EXISTS pool_members_printer ON pool_members (org_id, printer_id);

-- The members the router last saw unable to take jobs, whose recovery it watches for.
CREATE INDEX IF NOT EXISTS pool_members_unready ON pool_members (pool_id)
  WHERE unready_since IS NOT NULL;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS pool_id UUID;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS priority INT4 NOT NULL DEFAULT 50;

ALTER TABLE jobs ALTER COLUMN printer_id DROP NOT NULL;

ALTER TABLE jobs ALTER COLUMN station_id DROP NOT NULL;

-- The router's round: the queued pool jobs, by pool. Only pool jobs are in it, so a Spool without
-- pools pays nothing for it. (Counting a member's unfinished jobs uses jobs_station_status.)
CREATE INDEX IF NOT EXISTS jobs_pool_queued ON jobs (status, pool_id) WHERE pool_id IS NOT NULL;
