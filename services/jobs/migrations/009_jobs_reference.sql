-- Listing an organization's jobs by reference (`?reference=`), newest first, reads the matching
-- jobs only, not the organization's whole history. Jobs without a reference are not in it.
CREATE INDEX IF NOT EXISTS jobs_org_reference
  ON jobs (org_id, reference, created_at DESC, id DESC) WHERE reference <> '';
