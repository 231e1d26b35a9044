/**
 * A job's document as it comes down the link: the offer, then chunks in order. Each document is
 * checked against its offer (offsets, size, SHA-256) before it is handed on; one that does not
 * match is dropped, and the job waits for its next offer.
 */
import { createHash, type Hash } from 'node:crypto';
import type { DocumentChunk, JobOffer } from '../gen/spool/v1/stations.js';
import type { Logger } from '../lib/logger.js';

/** A document received whole and as offered. */
export interface AssembledJob {
  offer: JobOffer;
  document: Buffer;
}

interface Assembly {
  offer: JobOffer;
  parts: Buffer[];
  size: number;
  hash: Hash;
}

/** The documents being received, one per job. */
export class DocumentAssembler {
  readonly #logger: Logger;
  readonly #assemblies = new Map<string, Assembly>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** A job is offered: its document starts (again) from offset 0. */
  offer(offer: JobOffer): void {
    // A second offer of a job restarts its document (the server sends it from offset 0 again).
    this.#assemblies.set(offer.jobId, {
      offer,
      parts: [],
      size: 0,
      hash: createHash('sha256'),
    });
  }

  /** Takes one chunk; returns the job once its last chunk came and the document is as offered. */
  chunk(chunk: DocumentChunk): AssembledJob | undefined {
    const assembly = this.#assemblies.get(chunk.jobId);
    if (!assembly) {
      this.#logger.debug({ job_id: chunk.jobId }, 'ignoring a chunk of a job not offered');
      return undefined;
    }
    const { offer } = assembly;
    const drop = (why: string) => {
      this.#assemblies.delete(chunk.jobId);
      this.#logger.warn(
        { job_id: offer.jobId, attempt: offer.attempt, why },
        'dropping a job whose document does not match its offer; waiting for the next offer',
      );
      return undefined;
    };
    if (chunk.offset !== assembly.size)
      return drop(`chunk at ${chunk.offset}, expected ${assembly.size}`);
    assembly.parts.push(chunk.data);
    assembly.hash.update(chunk.data);
    assembly.size += chunk.data.length;
    if (assembly.size > offer.size) return drop(`more than the ${offer.size} bytes offered`);
    if (!chunk.last) return undefined;
    this.#assemblies.delete(chunk.jobId);
    if (assembly.size !== offer.size) return drop(`${assembly.size} bytes, ${offer.size} offered`);
    const digest = assembly.hash.digest('hex');
    if (digest !== offer.sha256.toLowerCase())
      return drop(`SHA-256 ${digest}, ${offer.sha256} offered`);
    return { offer, document: Buffer.concat(assembly.parts, assembly.size) };
  }

  /** The attempt was withdrawn: a document of it still arriving is dropped. */
  withdraw(jobId: string, attempt: number): void {
    if (this.#assemblies.get(jobId)?.offer.attempt === attempt) this.#assemblies.delete(jobId);
  }

  /** The link changed: a document half received on the old one is offered again from the start. */
  clear(): void {
    this.#assemblies.clear();
  }
}
