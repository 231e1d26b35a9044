-- The audit log of operator and console actions (docs/audit.md). It never holds a secret: no
-- request bodies, no credentials, no path parameter that carries a token.
CREATE TABLE IF NOT EXISTS audit_log (
  id UUID PRIMARY KEY,
  at TIMESTAMPTZ NOT NULL,
  actor TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  org_id TEXT NOT NULL DEFAULT '',
  method TEXT NOT NULL,
  route TEXT NOT NULL DEFAULT '',
  target JSONB NOT NULL DEFAULT '{}',
  -- 0 until the outcome is recorded: the action began and its answer is not known.
  status INT NOT NULL DEFAULT 0,
  ip TEXT NOT NULL DEFAULT '',
  user_agent TEXT NOT NULL DEFAULT '',
  request_id TEXT NOT NULL DEFAULT ''
);

CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at DESC, id DESC);

CREATE INDEX IF NOT EXISTS audit_log_org_at ON audit_log (org_id, at DESC, id DESC);

CREATE INDEX IF NOT EXISTS audit_log_actor_at ON audit_log (actor, at DESC, id DESC);
