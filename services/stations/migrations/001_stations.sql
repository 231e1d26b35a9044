-- Locations, stations (device tokens stored as SHA-256 only) and the printers agents report.
CREATE TABLE IF NOT EXISTS locations (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  name TEXT NOT NULL,
  address TEXT NOT NULL DEFAULT '',
  timezone TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS locations_org_created ON locations (org_id, created_at, id);

CREATE TABLE IF NOT EXISTS stations (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  name TEXT NOT NULL,
  location_id UUID,
  token_hash BYTEA NOT NULL,
  online BOOL NOT NULL DEFAULT false,
  link_id TEXT NOT NULL DEFAULT '',
  last_seen_at TIMESTAMPTZ,
  revoked_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS stations_token_hash ON stations (token_hash);

CREATE INDEX IF NOT EXISTS stations_org_created ON stations (org_id, created_at, id);

CREATE TABLE IF NOT EXISTS printers (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  station_id UUID NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  capabilities JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS printers_station_name ON printers (station_id, name);

CREATE INDEX IF NOT EXISTS printers_org_created ON printers (org_id, created_at, id);

CREATE TABLE IF NOT EXISTS stations_outbox (
  id UUID PRIMARY KEY,
  subject TEXT NOT NULL,
  payload BYTEA NOT NULL,
  headers JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
