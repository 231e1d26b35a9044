-- The home region of each job's station (where it is dispatched and printed), and on each event
-- caused by a station, the region that station is homed in. Single-region installations keep
-- the name `default`.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS region TEXT NOT NULL DEFAULT 'default';

ALTER TABLE job_events ADD COLUMN IF NOT EXISTS region TEXT NOT NULL DEFAULT '';
