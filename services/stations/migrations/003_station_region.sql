-- Each station's home region: its jobs are dispatched there and its agent is expected to connect
-- there. Single-region installations keep the name `default`.
ALTER TABLE stations ADD COLUMN IF NOT EXISTS region TEXT NOT NULL DEFAULT 'default';
