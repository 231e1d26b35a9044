-- Organizations and their API keys. Only a SHA-256 of each key is stored.
CREATE TABLE IF NOT EXISTS orgs (
  id UUID PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS api_keys (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL REFERENCES orgs (id),
  key_hash BYTEA NOT NULL,
  hint TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  live BOOL NOT NULL,
  scopes TEXT[] NOT NULL,
  allowed_ips TEXT[] NOT NULL,
  expires_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL,
  revoked_at TIMESTAMPTZ
);

CREATE UNIQUE INDEX IF NOT EXISTS api_keys_key_hash ON api_keys (key_hash);

CREATE INDEX IF NOT EXISTS api_keys_org_created ON api_keys (org_id, created_at, id);

CREATE TABLE IF NOT EXISTS accounts_outbox (
  id UUID PRIMARY KEY,
  subject TEXT NOT NULL,
  payload BYTEA NOT NULL,
  headers JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
