-- An invitation withdrawn by an admin or the operator, or superseded by a newer invitation of the
-- same email to the same organization: its link then answers as an unknown one does.
ALTER TABLE invitations ADD COLUMN IF NOT EXISTS revoked_at TIMESTAMPTZ;

-- Finds an organization's invitations of one email, to supersede them.
CREATE INDEX IF NOT EXISTS invitations_org_email ON invitations (org_id, email);
