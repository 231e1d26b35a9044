-- The W3C trace context of the request that created a job ({"traceparent": …}), so that every
-- offer of the job, however it reaches the station, continues the job's trace.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS trace_context JSONB NOT NULL DEFAULT '{}';
