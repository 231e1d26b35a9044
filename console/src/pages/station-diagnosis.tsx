/**
 * A station's diagnosis (docs/agent.md, "Diagnosis"): its linked agent's versions, its printers as
 * the agent's backends see them, and its last log lines.
 */
import type { JSX } from 'preact';
import type { DiagnosisView } from '../../../lib/contracts/diagnosis-view.js';

/** One JSON log line as `13:04:07 INFO station link up  printer=desk`. */
function logLine(line: string): string {
  try {
    const {
      time,
      level,
      msg,
      name: _name,
      pid: _pid,
      hostname: _host,
      ...rest
    } = JSON.parse(line) as Record<string, unknown>;
    const fields = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    return `${String(time ?? '').slice(11, 19)} ${String(level ?? '').toUpperCase()} ${String(msg ?? '')}${fields ? `  ${fields}` : ''}`;
  } catch {
    return line;
  }
}

export function StationDiagnosis(props: { name: string; diagnosis: DiagnosisView }): JSX.Element {
  const d = props.diagnosis;
  return (
    <section class="card" aria-labelledby="diagnosis-title">
      <h2 id="diagnosis-title">Diagnosis of {props.name}</h2>
      <h3>Versions</h3>
      <dl class="counts">
        {Object.entries(d.versions).map(([name, version]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{version}</dd>
          </div>
        ))}
      </dl>
      <h3>Printers, as the agent sees them</h3>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Backend</th>
            <th scope="col">Status</th>
            <th scope="col">Held jobs</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {d.printers.map((p) => (
            <tr key={p.name}>
              <th scope="row">{p.name}</th>
              <td>
                <code>{p.backend}</code>
              </td>
              <td>{p.status}</td>
              <td>{p.held_jobs}</td>
              <td>{[p.detail, p.raw].filter((s) => s !== '').join('; ') || '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>
        Last {d.log_lines.length} log lines
        {d.truncated ? ' (older ones left out to keep the report within 1 MiB)' : ''}
      </h3>
      <pre class="log">{d.log_lines.map(logLine).join('\n')}</pre>
    </section>
  );
}
