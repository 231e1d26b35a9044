/**
 * A station's diagnosis as the operator API and the console answer it (DESIGN "Agent releases",
 * docs/agent.md "Diagnosis"): the body asking for one, the report's JSON and its schema.
 */
import { Type } from '@sinclair/typebox';
import type { DiagnoseReport } from '../gen/spool/v1/stations.js';
import { MAX_DIAGNOSIS_LOG_LINES } from '../lib/contracts/diagnosis.js';
import { PrinterSchema } from './schemas.js';

export const DiagnoseBody = Type.Object(
  {
    log_lines: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DIAGNOSIS_LOG_LINES,
        description: `how many of the agent's last log lines to include (default ${MAX_DIAGNOSIS_LOG_LINES})`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const DiagnosisSchema = Type.Object(
  {
    versions: Type.Record(Type.String(), Type.String(), {
      description: 'agent, node, platform, os, and cups when the station drives CUPS queues',
    }),
    printers: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          backend: Type.String({
            description:
              'the backend and its target, never with credentials: file:DIR, cups:QUEUE, raw:HOST:PORT, ipp://HOST:PORT/PATH',
          }),
          status: Type.String(),
          detail: Type.String(),
          capabilities: PrinterSchema.properties.capabilities,
          raw: Type.String({ description: "the backend's own words for the printer's state" }),
          held_jobs: Type.Integer({ description: 'jobs the agent holds for it, not finished' }),
        },
        { additionalProperties: false },
      ),
    ),
    log_lines: Type.Array(Type.String(), {
      description: 'the agent’s last log lines, oldest first, as it wrote them (JSON lines)',
    }),
    truncated: Type.Boolean({
      description: 'lines or printers were left out to keep the report within 1 MiB',
    }),
  },
  { additionalProperties: false },
);

export function diagnosisView(report: DiagnoseReport | undefined) {
  if (!report) throw new Error('missing report in response');
  return {
    versions: report.versions,
    printers: report.printers.map((p) => ({
      name: p.name,
      backend: p.backend,
      status: p.status,
      detail: p.detail,
      capabilities: {
        paper_sizes: p.capabilities?.paperSizes ?? [],
        duplex: p.capabilities?.duplex ?? false,
        color: p.capabilities?.color ?? false,
        copies: p.capabilities?.copies ?? false,
        trays: p.capabilities?.trays ?? [],
        document_formats: p.capabilities?.documentFormats ?? [],
      },
      raw: p.raw,
      held_jobs: p.heldJobs,
    })),
    log_lines: report.logLines,
    truncated: report.truncated,
  };
}

/** How long the gateway waits on a diagnosis: the agent's 10 s, and the hops around it. */
export const DIAGNOSE_DEADLINE_MS = 15_000;
