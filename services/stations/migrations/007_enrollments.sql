-- Enrollment codes: one-use codes a station's agent exchanges for the station and its device
-- token. Only the SHA-256 of a code is kept. A used one names the station it made.
CREATE TABLE IF NOT EXISTS enrollments (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  code_hash BYTEA NOT NULL,
  station_name TEXT NOT NULL,
  location_id UUID,
  expires_at TIMESTAMPTZ NOT NULL,
  used_at TIMESTAMPTZ,
  station_id UUID,
  created_at TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS enrollments_code_hash ON enrollments (code_hash);

CREATE INDEX IF NOT EXISTS enrollments_org_expires ON enrollments (org_id, expires_at);
