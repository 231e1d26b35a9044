-- Agent releases (DESIGN "Agent releases"): signed manifests kept byte for byte, the rollouts that
-- target a share of the stations at one, and each station's platform and last update report.
CREATE TABLE IF NOT EXISTS releases (
  version TEXT PRIMARY KEY,
  manifest BYTEA NOT NULL,
  signature BYTEA NOT NULL,
  platforms JSONB NOT NULL,
  published_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS rollouts (
  id UUID PRIMARY KEY,
  version TEXT NOT NULL,
  percent INT NOT NULL,
  org_id UUID,
  max_failures INT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  stopped_at TIMESTAMPTZ,
  stopped_reason TEXT NOT NULL DEFAULT ''
);

CREATE INDEX IF NOT EXISTS rollouts_version ON rollouts (version, created_at);

ALTER TABLE stations ADD COLUMN IF NOT EXISTS platform TEXT NOT NULL DEFAULT '';

ALTER TABLE stations ADD COLUMN IF NOT EXISTS update_state TEXT NOT NULL DEFAULT '';

ALTER TABLE stations ADD COLUMN IF NOT EXISTS update_version TEXT NOT NULL DEFAULT '';

ALTER TABLE stations ADD COLUMN IF NOT EXISTS update_detail TEXT NOT NULL DEFAULT '';

ALTER TABLE stations ADD COLUMN IF NOT EXISTS update_at TIMESTAMPTZ;

CREATE INDEX IF NOT EXISTS stations_update_version ON stations (update_version);

CREATE INDEX IF NOT EXISTS stations_agent_version ON stations (agent_version);
