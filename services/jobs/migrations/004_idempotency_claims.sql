-- Idempotency-Key claims carry an id, so that a stale claim can be taken over by a retry without
-- the abandoned request completing it afterwards; a key that created a job names it.
ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS claim UUID;

ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS job_id UUID;
