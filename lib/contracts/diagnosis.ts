/**
 * A station's diagnosis (DESIGN "Agent releases"): what an agent may put in its DiagnoseReport,
 * and how much of it the stations service believes. The agent builds its report within these
 * bounds (agent/diagnose.ts); the service takes an agent's report only through
 * {@link trustedDiagnosis}, which cuts what is over them and takes out anything shaped like a
 * secret once more.
 */
import { DiagnoseReport, type PrinterDiagnosis } from '../../gen/spool/v1/stations.js';

/** The most log lines a diagnosis carries (and the agent keeps). */
export const MAX_DIAGNOSIS_LOG_LINES = 200;
/** A longer log line is cut to this many characters. */
export const MAX_LOG_LINE = 8_192;
/**
 * The encoded report's ceiling: under NATS's default 1 MiB payload, with room for the headers
 * and the envelope it crosses the bus in.
 */
export const MAX_REPORT_BYTES = 960 * 1024;
/** More printers than any station drives. */
const MAX_PRINTERS = 1_000;
const MAX_VERSIONS = 32;
const MAX_FIELD = 1_024;

const CREDENTIAL = /svc_(?:live|test|dev|sess|inv)_[A-Za-z0-9_-]+/g;
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/\s"'@]*@/gi;

/** `text` with anything shaped like a Spool credential, or a URL's user and password, taken out. */
export function scrubSecrets(text: string): string {
  return text.replace(CREDENTIAL, '[redacted]').replace(USERINFO, '$1');
}

function field(text: string, max = MAX_FIELD): string {
  return scrubSecrets(text.length > max ? `${text.slice(0, max)}…` : text);
}

/**
 * `report`, its oldest log lines left out (then its last printers) until it encodes within
 * `limit`; `truncated` says when anything was.
 */
export function capped(report: DiagnoseReport, limit = MAX_REPORT_BYTES): DiagnoseReport {
  let size = DiagnoseReport.encode(report).finish().length;
  if (size <= limit) return report;
  const logLines = [...report.logLines];
  const printers = [...report.printers];
  while (size > limit && (logLines.length > 0 || printers.length > 0)) {
    let over = size - limit;
    while (over > 0 && logLines.length > 0) {
      over -= Buffer.byteLength(logLines.shift() as string) + 3;
    }
    if (over > 0 && logLines.length === 0) printers.pop();
    size = DiagnoseReport.encode({ ...report, logLines, printers }).finish().length;
  }
  return { ...report, logLines, printers, truncated: true };
}

/** An agent's report, as far as Spool believes it: bounded, scrubbed, within its cap. */
export function trustedDiagnosis(sent: DiagnoseReport): DiagnoseReport {
  const lines = sent.logLines.slice(-MAX_DIAGNOSIS_LOG_LINES);
  const printers = sent.printers.slice(0, MAX_PRINTERS).map(
    (p): PrinterDiagnosis => ({
      name: field(p.name, 256),
      backend: field(p.backend),
      status: field(p.status, 32),
      detail: field(p.detail),
      capabilities: p.capabilities,
      raw: field(p.raw),
      heldJobs: p.heldJobs,
    }),
  );
  const versions = Object.fromEntries(
    Object.entries(sent.versions)
      .slice(0, MAX_VERSIONS)
      .map(([k, v]) => [field(k, 64), field(v, 256)]),
  );
  const cut =
    lines.length < sent.logLines.length ||
    printers.length < sent.printers.length ||
    Object.keys(versions).length < Object.keys(sent.versions).length;
  return capped({
    requestId: sent.requestId,
    logLines: lines.map((line) => field(line, MAX_LOG_LINE)),
    printers,
    versions,
    truncated: sent.truncated || cut,
  });
}
