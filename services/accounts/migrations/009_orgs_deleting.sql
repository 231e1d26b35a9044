-- When an organization's deletion began (`DELETE /admin/v1/orgs/{org}`), for an organization that
-- a deletion left part-deleted: nothing more can be added to it, and the operator sees that it is
-- being deleted.
ALTER TABLE orgs ADD COLUMN IF NOT EXISTS deleting_since TIMESTAMPTZ;
