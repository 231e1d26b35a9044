-- Sign-in attempts counted per subject (`email:<address>`, `ip:<address>`): one row each, moved
-- by a single upsert per attempt, over a window that opens at the subject's first attempt and
-- lasts the failure window. The window's id tells a count taken back from one window apart from
-- the next. They replace the rows of sign_in_failures, one per failure, which every attempt
-- counted under SERIALIZABLE and so conflicted with every other attempt on the same subject;
-- that table is left to replicas of the earlier version until they have stopped.
CREATE TABLE IF NOT EXISTS sign_in_counts (
  subject TEXT PRIMARY KEY,
  window_id UUID NOT NULL,
  window_start TIMESTAMPTZ NOT NULL,
  attempts INT NOT NULL
);

-- Windows that have ended are deleted in small batches, found by their start.
CREATE INDEX IF NOT EXISTS sign_in_counts_window_start ON sign_in_counts (window_start);
