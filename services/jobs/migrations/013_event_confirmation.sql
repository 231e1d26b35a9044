-- A printed event of a job's history carries the printer's confirmation, as the job does.
ALTER TABLE job_events ADD COLUMN IF NOT EXISTS confirmation JSONB;
