-- Usage per organization and UTC day (docs/platforms.md, "Usage"), kept by the usage rollup
-- (usage-rollup.ts) from the jobs it reads after they are written, never by job creation or the
-- state machine. `jobs_created` and `bytes` count on the day a job was created; `jobs_printed`,
-- `jobs_failed` and `pages` on the day it finished.
CREATE TABLE IF NOT EXISTS usage_days (
  org_id UUID NOT NULL,
  day DATE NOT NULL,
  jobs_created INT8 NOT NULL DEFAULT 0,
  jobs_printed INT8 NOT NULL DEFAULT 0,
  jobs_failed INT8 NOT NULL DEFAULT 0,
  pages INT8 NOT NULL DEFAULT 0,
  bytes INT8 NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, day)
);

-- The rollup's mark (the time it has counted jobs up to) and the lease that lets one replica at
-- a time run it.
CREATE TABLE IF NOT EXISTS usage_rollups (
  name TEXT PRIMARY KEY,
  through TIMESTAMPTZ,
  lease_holder UUID,
  lease_until TIMESTAMPTZ
);

-- A printed PDF's page count (copies not included), written once by the rollup: the document
-- may be gone by retention later, and the count stays. NULL until counted, and for other
-- documents.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS pages INT4;

-- The day the rollup counted the job failed on; a failed job retried is then uncounted there.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS usage_failed_on DATE;

-- The jobs counted failed that were retried since and are unfinished: only those rows are in it,
-- so creating and moving other jobs writes nothing to it.
CREATE INDEX IF NOT EXISTS jobs_usage_retried ON jobs (org_id)
  WHERE usage_failed_on IS NOT NULL AND finished_at IS NULL;
