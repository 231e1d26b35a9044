-- When each API key was last used, to the minute or so: the gateways write what they saw in
-- batches, so that a leaked key's use, and keys nobody uses any more, can be told.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS last_used_at TIMESTAMPTZ;
