-- Scheduling, holds, expiry, reprints and retention of jobs; uploads, templates, the daily count
-- of test prints, and Idempotency-Key records.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS schedule_at TIMESTAMPTZ;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS expire_after INT4 NOT NULL DEFAULT 0;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS expire_at TIMESTAMPTZ;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS finished_at TIMESTAMPTZ;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS document_deleted_at TIMESTAMPTZ;

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS reprint_of UUID;

CREATE INDEX IF NOT EXISTS jobs_status_schedule ON jobs (status, schedule_at);

CREATE INDEX IF NOT EXISTS jobs_status_expire ON jobs (status, expire_at);

CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at);

CREATE TABLE IF NOT EXISTS uploads (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  content_type TEXT NOT NULL,
  size INT8 NOT NULL,
  sha256 TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  deleted_at TIMESTAMPTZ
);

CREATE INDEX IF NOT EXISTS uploads_created ON uploads (created_at);

CREATE TABLE IF NOT EXISTS templates (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  fields JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS templates_org_created ON templates (org_id, created_at, id);

CREATE TABLE IF NOT EXISTS test_print_counts (
  org_id UUID NOT NULL,
  day DATE NOT NULL,
  n INT4 NOT NULL,
  PRIMARY KEY (org_id, day)
);

CREATE TABLE IF NOT EXISTS idempotency_keys (
  org_id UUID NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status INT4 NOT NULL DEFAULT 0,
  body BYTEA,
  created_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (org_id, key)
);

CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
