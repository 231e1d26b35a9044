-- A station's rollout bucket (SHA-256 of its id, first 4 bytes big-endian, mod 100), written with
-- the station, so that rollouts count the stations they cover in SQL rather than by hashing every
-- id. Stations made before it are filled in by the stations service when it starts.
ALTER TABLE stations ADD COLUMN IF NOT EXISTS rollout_bucket INT;
