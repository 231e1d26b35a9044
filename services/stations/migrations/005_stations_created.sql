-- The operator's list of every organization's stations (`GET /admin/v1/stations`) pages through
-- them oldest first: this index reads each page in order, where a fleet's whole table was sorted
-- for every page.
CREATE INDEX IF NOT EXISTS stations_created ON stations (created_at, id);
