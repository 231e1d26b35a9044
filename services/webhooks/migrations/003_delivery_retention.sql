-- The delivery log's retention sweep reads finished deliveries oldest first.
CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (finished_at)
  WHERE finished_at IS NOT NULL;
