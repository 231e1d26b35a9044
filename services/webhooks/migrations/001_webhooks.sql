-- Webhook endpoints (secrets only as AES-256-GCM ciphertexts), the deliveries fanned out to them
-- with their retry schedule, and the log of every attempt.
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  url TEXT NOT NULL,
  events TEXT[] NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  enabled BOOL NOT NULL,
  disabled_reason TEXT NOT NULL DEFAULT '',
  disabled_at TIMESTAMPTZ,
  secret BYTEA NOT NULL,
  previous_secret BYTEA,
  previous_secret_expires_at TIMESTAMPTZ,
  secret_rotated_at TIMESTAMPTZ,
  failing_since TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS webhook_endpoints_org_created ON webhook_endpoints (org_id, created_at, id);

-- state: pending (next_attempt_at is when it is due, or when a claim's lease ends), succeeded or
-- failed. claim names the worker round holding the delivery while an attempt is in flight.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  endpoint_id UUID NOT NULL,
  event_id UUID NOT NULL,
  event_type TEXT NOT NULL,
  body BYTEA NOT NULL,
  state TEXT NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  round_attempts INT NOT NULL DEFAULT 0,
  next_attempt_at TIMESTAMPTZ,
  claim UUID,
  last_attempt_at TIMESTAMPTZ,
  last_status_code INT NOT NULL DEFAULT 0,
  notice TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ
);

-- One delivery per event and endpoint, however often the event arrives.
CREATE UNIQUE INDEX IF NOT EXISTS webhook_deliveries_event_endpoint ON webhook_deliveries (event_id, endpoint_id);

CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at, id);

-- An attempt is written when it is claimed, before the request leaves, and completed after; the
-- unique number per delivery is what keeps two workers from sending the same attempt.
CREATE TABLE IF NOT EXISTS webhook_attempts (
  id UUID PRIMARY KEY,
  org_id UUID NOT NULL,
  delivery_id UUID NOT NULL,
  number INT NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  outcome TEXT NOT NULL,
  status_code INT NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  duration_ms INT NOT NULL DEFAULT 0,
  response_body TEXT NOT NULL DEFAULT ''
);

CREATE UNIQUE INDEX IF NOT EXISTS webhook_attempts_delivery_number ON webhook_attempts (delivery_id, number);
