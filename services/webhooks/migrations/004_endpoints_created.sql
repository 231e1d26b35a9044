-- The operator's list of every organization's endpoints (`GET /admin/v1/webhooks`) pages through
-- them oldest first: this index reads each page in order rather than sorting the table each time.
CREATE INDEX IF NOT EXISTS webhook_endpoints_created ON webhook_endpoints (created_at, id);
