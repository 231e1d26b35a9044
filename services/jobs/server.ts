/**
 * The jobs gRPC service: creates jobs (storing the document in the object store first), answers
 * job queries, and applies the API's actions through the state machine.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ObjectStore } from '@nats-io/obj';
import type { JobsServiceServer } from '../../gen/spool/v1/jobs.js';
import type { StationsServiceClient } from '../../gen/spool/v1/stations.js';
import { invalid, notFound, SpoolError } from '../../lib/errors.js';
import type { AsyncClient, AsyncServer } from '../../lib/grpc.js';
import { isUuid } from '../../lib/ids.js';
import { pageLimit } from '../../lib/paging.js';
import { isJobStatus, JOB_STATUSES } from './machine.js';
import type { JobStore } from './store.js';

export const CONTENT_TYPES = ['application/pdf', 'application/octet-stream', 'text/plain'] as const;

export const MAX_TEXT_LENGTH = 1000;

function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw notFound(`no such ${what}`);
  return value;
}

export interface JobsServerDeps {
  store: JobStore;
  documents: ObjectStore;
  stations: AsyncClient<StationsServiceClient>;
  /** Largest document accepted, in bytes. */
  maxDocumentBytes: number;
  /** Called after a change commits, so its messages leave at once. */
  onChange?: () => void;
}

export function createJobsServer(deps: JobsServerDeps): AsyncServer<JobsServiceServer> {
  const { store } = deps;
  const changed = () => deps.onChange?.();

  return {
    async createJob(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      if (!isUuid(req.printerId))
        throw invalid('printer_id must be the id of a printer', 'printer_id');
      if (!(CONTENT_TYPES as readonly string[]).includes(req.contentType)) {
        throw invalid(`content type must be one of ${CONTENT_TYPES.join(', ')}`, 'content');
      }
      if (req.document.length > deps.maxDocumentBytes) {
        throw new SpoolError(
          'payload_too_large',
          `the document is larger than ${deps.maxDocumentBytes} bytes`,
          { param: 'content' },
        );
      }
      if (req.title.length > MAX_TEXT_LENGTH) throw invalid('title is too long', 'title');
      if (req.reference.length > MAX_TEXT_LENGTH)
        throw invalid('reference is too long', 'reference');
      let printer: Awaited<ReturnType<typeof deps.stations.getPrinter>>['printer'];
      try {
        ({ printer } = await deps.stations.getPrinter(
          { orgId, printerId: req.printerId },
          { parent: call },
        ));
      } catch (err) {
        if ((err as SpoolError).code === 'not_found') {
          throw invalid('printer_id names no printer of this organization', 'printer_id');
        }
        throw err;
      }
      if (!printer) throw invalid('printer_id names no printer of this organization', 'printer_id');
      const id = randomUUID();
      const document = Buffer.from(req.document);
      const sha256 = createHash('sha256').update(document).digest('hex');
      // The bytes are stored before the job exists; a job whose commit fails leaves an object
      // that retention removes, never a job without its document.
      await deps.documents.putBlob({ name: id, description: req.contentType }, document);
      const job = await store.create({
        id,
        orgId,
        printerId: printer.id,
        stationId: printer.stationId,
        live: req.live,
        title: req.title,
        reference: req.reference,
        options: req.options ?? {
          copies: 0,
          duplex: '',
          color: '',
          paper: '',
          tray: '',
          pages: '',
          fitToPage: false,
          rotate: 0,
        },
        contentType: req.contentType,
        size: document.length,
        sha256,
        actor: req.actor,
      });
      changed();
      return { job };
    },

    async getJob(req) {
      return store.get(requireUuid(req.orgId, 'organization'), requireUuid(req.jobId, 'job'));
    },

    async listJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      for (const status of req.statuses) {
        if (!isJobStatus(status)) {
          throw invalid(
            `unknown status ${JSON.stringify(status)}; statuses are ${JOB_STATUSES.join(', ')}`,
            'status',
          );
        }
      }
      for (const [param, value] of [
        ['printer_id', req.printerId],
        ['station_id', req.stationId],
      ] as const) {
        if (value && !isUuid(value)) throw invalid(`${param} must be an id`, param);
      }
      return store.list(
        orgId,
        {
          statuses: req.statuses,
          reference: req.reference,
          printerId: req.printerId,
          stationId: req.stationId,
          createdAfter: req.createdAfter,
          createdBefore: req.createdBefore,
        },
        pageLimit(req.limit),
        req.cursor,
      );
    },

    async cancelJob(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { job } = await store.apply(orgId, requireUuid(req.jobId, 'job'), 'cancel', {
        actor: req.actor,
      });
      changed();
      return { job };
    },

    async retryJob(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { job } = await store.apply(orgId, requireUuid(req.jobId, 'job'), 'retry', {
        actor: req.actor,
      });
      changed();
      return { job };
    },

    async pendingJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { items: await store.pending(orgId, requireUuid(req.stationId, 'station')) };
    },
  };
}
