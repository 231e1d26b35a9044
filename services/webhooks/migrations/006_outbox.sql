-- What the webhooks service tells other processes (the event stream's webhook_endpoint.* events),
-- written in the transaction of the change and published by the outbox relay (lib/outbox.ts).
CREATE TABLE IF NOT EXISTS webhooks_outbox (
  id UUID PRIMARY KEY,
  subject TEXT NOT NULL,
  payload BYTEA NOT NULL,
  headers JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
