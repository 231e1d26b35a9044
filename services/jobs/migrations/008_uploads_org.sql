-- Deleting an organization reads its uploads batch by batch: by this index, not the whole table.
CREATE INDEX IF NOT EXISTS uploads_org ON uploads (org_id);
