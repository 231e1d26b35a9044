-- A job whose content came sealed: its document is printed and reprinted, never served back.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS sealed BOOL NOT NULL DEFAULT false;
