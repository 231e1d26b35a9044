-- Organizations the operator deleted, by id alone: their audit entries stay, and the audit log
-- still takes their id as the organization to list entries of.
CREATE TABLE IF NOT EXISTS deleted_orgs (
  id UUID PRIMARY KEY,
  deleted_at TIMESTAMPTZ NOT NULL
);
