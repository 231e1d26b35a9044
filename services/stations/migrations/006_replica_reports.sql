-- Whether the replica could store its stations' reports in NATS at its last beat. A replica whose
-- reports cannot be stored ends its links only while another replica can take them, so that a
-- NATS outage that every replica shares does not take every station offline and back.
ALTER TABLE station_replicas ADD COLUMN IF NOT EXISTS takes_reports BOOL NOT NULL DEFAULT true;
