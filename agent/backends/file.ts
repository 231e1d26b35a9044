/**
 * `file:DIR`: each job's document is written to `DIR/<job_id>-<attempt>.<ext>`, and each further
 * copy a job asks for to `DIR/<job_id>-<attempt>-copy<n>.<ext>`. For trying Spool without a
 * printer, for tests, and for keeping what a station prints in a folder (a share, say).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AS_IS_CAPABILITIES,
  type Backend,
  type Confirmation,
  copiesOf,
  HANDED_OFF,
  messageOf,
  NotSentError,
  type PrinterStatus,
  type PrintJob,
} from './backend.js';

const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'text/plain': 'txt',
};

/**
 * The file name a job is written to: `<job_id>-<attempt>.<pdf|txt|bin>`, or for its copy number
 * `copy` (from 2) `<job_id>-<attempt>-copy<copy>.<ext>`.
 */
export function fileNameFor(
  job: Pick<PrintJob, 'id' | 'attempt' | 'contentType'>,
  copy = 1,
): string {
  const type = job.contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  // Job ids come from the server; keep them from naming a path outside DIR all the same.
  const id = job.id.replace(/[^A-Za-z0-9._-]/g, '_');
  const suffix = copy > 1 ? `-copy${copy}` : '';
  return `${id}-${job.attempt}${suffix}.${EXTENSIONS[type] ?? 'bin'}`;
}

/**
 * Why a folder cannot be written that the status read also finds (it is gone, not a folder, or not
 * writable): a job that met one before anything was written waits for the folder, as for a printer
 * switched off. Any other failure (a full disk, say) fails the job.
 */
const FOLDER_UNWRITABLE = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS']);

export function createFileBackend(dir: string): Backend {
  // DIR is made when the agent first uses it; a DIR removed later (a share unmounted, say) is
  // reported, not quietly made again where the share was.
  let made = false;
  const makeOnce = async () => {
    if (made) return;
    await mkdir(dir, { recursive: true });
    made = true;
  };

  /** Writes one copy; `first` when nothing of the job was written before it. */
  async function write(job: PrintJob, copy: number, first: boolean): Promise<void> {
    const name = fileNameFor(job, copy);
    const target = join(dir, name);
    // Written beside the target and renamed over it, so DIR never holds half a document.
    const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await makeOnce();
      const handle = await open(temp, 'wx', 0o644).catch((error: unknown) => {
        const code = (error as NodeJS.ErrnoException).code ?? '';
        if (first && FOLDER_UNWRITABLE.has(code)) {
          throw new NotSentError(`file: could not write ${target}: ${messageOf(error)}`);
        }
        throw error;
      });
      try {
        await handle.writeFile(job.document);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      if (error instanceof NotSentError) throw error;
      throw new Error(`file: could not write ${target}: ${messageOf(error)}`);
    }
  }

  return {
    async print(job: PrintJob): Promise<Confirmation> {
      // The first copy last: its file tells `outcome` that the whole job came out.
      const copies = copiesOf(job);
      for (let copy = copies; copy >= 1; copy -= 1) await write(job, copy, copy === copies);
      return HANDED_OFF;
    },

    async outcome(job) {
      const prefix = `${fileNameFor({ ...job, contentType: '' }).replace(/\.bin$/, '')}.`;
      const names = await readdir(dir).catch(() => [] as string[]);
      return names.some((name) => name.startsWith(prefix)) ? HANDED_OFF : 'not_printed';
    },

    async status(): Promise<PrinterStatus> {
      try {
        await makeOnce();
        if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
        await access(dir, constants.W_OK);
        return { status: 'ready', detail: '', capabilities: AS_IS_CAPABILITIES };
      } catch (error) {
        return {
          status: 'error',
          detail: `cannot write to ${dir}: ${messageOf(error)}`,
          capabilities: AS_IS_CAPABILITIES,
        };
      }
    },
  };
}
