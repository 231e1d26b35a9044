-- Failed sign-ins older than the window are deleted in small batches, found by time.
CREATE INDEX IF NOT EXISTS sign_in_failures_at ON sign_in_failures (at);
