-- A platform's child organizations (DESIGN §5): a child names its parent, one level only, and
-- may carry the parent's own reference for it (a customer number). A parent lists its children
-- oldest first, or those of one reference: both read in order through these indexes.
ALTER TABLE orgs ADD COLUMN IF NOT EXISTS parent_id UUID;
ALTER TABLE orgs ADD COLUMN IF NOT EXISTS reference TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS orgs_parent_created ON orgs (parent_id, created_at, id);
CREATE INDEX IF NOT EXISTS orgs_parent_reference ON orgs (parent_id, reference, created_at, id);
