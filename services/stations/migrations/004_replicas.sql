-- Each stations replica says it is alive here every few seconds, and names itself in the link ids
-- it writes (`<replica>:<link>`), so that another replica can record offline the stations whose
-- links ended with a replica that died without recording their ends.
CREATE TABLE IF NOT EXISTS station_replicas (
  id TEXT PRIMARY KEY,
  seen_at TIMESTAMPTZ NOT NULL
);
