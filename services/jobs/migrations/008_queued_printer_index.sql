-- The printers that have queued jobs, found without reading every queued job: a printer's or
-- station's event changes the waiting detail of queued jobs only, and most have none.
CREATE INDEX IF NOT EXISTS jobs_queued_printer ON jobs (printer_id) WHERE status = 'queued';
