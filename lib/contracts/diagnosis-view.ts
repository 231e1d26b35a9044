/**
 * The `diagnosis` a station diagnosis answers (`POST /admin/v1/orgs/{org}/stations/{id}/diagnose`
 * and its console twin), as the CLI and the console read it (docs/agent.md, "Diagnosis").
 */
export interface DiagnosisView {
  versions: Record<string, string>;
  printers: Array<{
    name: string;
    backend: string;
    status: string;
    detail: string;
    raw: string;
    held_jobs: number;
  }>;
  log_lines: string[];
  truncated: boolean;
}
