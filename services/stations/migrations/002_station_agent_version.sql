-- The agent version a station's agent gave in its last hello, for the operator's station list.
ALTER TABLE stations ADD COLUMN IF NOT EXISTS agent_version TEXT NOT NULL DEFAULT '';

CREATE INDEX IF NOT EXISTS stations_org_location ON stations (org_id, location_id);
