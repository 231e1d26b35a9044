-- The W3C trace context of the event a delivery carries, so that each attempt joins the trace of
-- the job (or station) that caused the event.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS trace_context JSONB NOT NULL DEFAULT '{}';
