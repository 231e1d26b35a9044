-- Installation-wide settings set by administrators, one row per setting.
CREATE TABLE IF NOT EXISTS settings (
  name TEXT PRIMARY KEY,
  value JSONB NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);
