-- Jobs and their events. Document bytes live in the DOCUMENTS object store; the row keeps
-- their content type, size and SHA-256.
CREATE TABLE IF NOT EXISTS jobs (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  printer_id UUID NOT NULL,
  station_id UUID NOT NULL,
  status TEXT NOT NULL,
  status_detail TEXT NOT NULL DEFAULT '',
  reference TEXT NOT NULL DEFAULT '',
  title TEXT NOT NULL DEFAULT '',
  live BOOL NOT NULL,
  options JSONB NOT NULL DEFAULT '{}',
  content_type TEXT NOT NULL,
  size INT8 NOT NULL,
  sha256 TEXT NOT NULL,
  attempt INT4 NOT NULL DEFAULT 1,
  -- Counts the job's changes; its events are numbered by it, so they keep their order even when
  -- two fall in the same millisecond.
  version INT4 NOT NULL DEFAULT 1,
  created_by TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS jobs_org_created ON jobs (org_id, created_at DESC, id DESC);

CREATE INDEX IF NOT EXISTS jobs_station_status ON jobs (station_id, status);

CREATE TABLE IF NOT EXISTS job_events (
  id UUID PRIMARY KEY,
  job_id UUID NOT NULL,
  org_id UUID NOT NULL,
  seq INT4 NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  status TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  actor TEXT NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS job_events_job_seq ON job_events (job_id, seq);

CREATE TABLE IF NOT EXISTS jobs_outbox (
  id UUID PRIMARY KEY,
  subject TEXT NOT NULL,
  payload BYTEA NOT NULL,
  headers JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
