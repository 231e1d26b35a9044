-- People, their memberships of organizations, invitations and signed-in sessions. Invitation
-- tokens and session credentials are stored only as SHA-256 hashes; passwords as scrypt hashes.
CREATE TABLE IF NOT EXISTS people (
  id UUID PRIMARY KEY,
  -- Kept lowercased, so that uniqueness is case-insensitive.
  email TEXT NOT NULL,
  display_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS people_email ON people (email);

CREATE TABLE IF NOT EXISTS memberships (
  org_id UUID NOT NULL REFERENCES orgs (id),
  person_id UUID NOT NULL REFERENCES people (id),
  role TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (org_id, person_id)
);

CREATE INDEX IF NOT EXISTS memberships_person ON memberships (person_id);

CREATE TABLE IF NOT EXISTS invitations (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL REFERENCES orgs (id),
  token_hash BYTEA NOT NULL,
  email TEXT NOT NULL,
  role TEXT NOT NULL,
  invited_by UUID,
  created_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  used_at TIMESTAMPTZ
);

CREATE UNIQUE INDEX IF NOT EXISTS invitations_token_hash ON invitations (token_hash);

CREATE INDEX IF NOT EXISTS invitations_org ON invitations (org_id, created_at);

CREATE TABLE IF NOT EXISTS sessions (
  id UUID PRIMARY KEY,
  person_id UUID NOT NULL REFERENCES people (id),
  credential_hash BYTEA NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  last_seen_at TIMESTAMPTZ NOT NULL,
  revoked_at TIMESTAMPTZ
);

CREATE UNIQUE INDEX IF NOT EXISTS sessions_credential_hash ON sessions (credential_hash);

CREATE INDEX IF NOT EXISTS sessions_person ON sessions (person_id);

-- Failed sign-in attempts, counted per account (`email:<address>`) and per client address
-- (`ip:<address>`) over a sliding window; shared by every replica through the database.
CREATE TABLE IF NOT EXISTS sign_in_failures (
  id UUID PRIMARY KEY,
  subject TEXT NOT NULL,
  at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS sign_in_failures_subject_at ON sign_in_failures (subject, at);
