-- Small documents are kept with their job instead of in the DOCUMENTS object store: one write at
-- creation, and the dispatch message carries them, so a station prints without a second fetch.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS document BYTEA;
