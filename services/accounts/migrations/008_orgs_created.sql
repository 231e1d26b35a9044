-- The operator's list of organizations (`GET /admin/v1/orgs`) pages through them oldest first:
-- this index reads each page in order rather than sorting the table each time.
CREATE INDEX IF NOT EXISTS orgs_created ON orgs (created_at, id);
