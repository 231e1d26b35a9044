-- What a printed job's station said of it: {"level": "handed_off" | "device_completed", "pages": N}
-- (pages only where the printer counted them). NULL until the job is printed.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS confirmation JSONB;
