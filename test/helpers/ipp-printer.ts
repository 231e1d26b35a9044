/**
 * A real IPP Everywhere printer for the IPP tests: CUPS's `ippeveprinter`, on a free port of the
 * private network the IPP phase runs in (test/helpers/netns.ts). Each job runs a print command
 * written here, which records the job's IPP attributes (ippeveprinter hands them over as
 * `IPP_*` variables), says how many impressions it printed, and, while the test holds the
 * printer's paper tray empty, reports `media-empty` and waits for paper, as a printer does.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { type Process, spawnProcess } from './processes.js';

export interface IppPrinter {
  /** `ipp://127.0.0.1:PORT/ipp/print`. */
  uri: string;
  /** The IPP attributes of every job it printed, oldest first (`IPP_SIDES` → `sides`). */
  jobs(): Promise<Array<Record<string, string>>>;
  /** How many impressions each job from now on says it printed. */
  setImpressions(count: number): Promise<void>;
  /**
   * Empties the paper tray: the next job reports `media-empty` and waits, holding the printer,
   * until {@link loadPaper}.
   */
  emptyTray(): Promise<void>;
  loadPaper(): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

export interface IppPrinterOptions {
  /** Prints on both sides (`sides-supported` with the two-sided values). */
  twoSided?: boolean;
  /** Document formats it takes (default PDF, PWG raster and text). */
  formats?: string[];
}

/** The print command: ippeveprinter runs it with the job's file and its attributes as IPP_*. */
function printCommand(dir: string): string {
  return `#!/bin/sh
# The job's attributes, one per line, for the test to read.
env | grep '^IPP_' > "${dir}/jobs/$(date +%s%N).env"
if [ -e "${dir}/tray-empty" ]; then
  echo "STATE: +media-empty" >&2
  while [ -e "${dir}/tray-empty" ]; do sleep 0.1; done
  echo "STATE: -media-empty" >&2
fi
echo "ATTR: job-impressions-completed=$(cat "${dir}/impressions")" >&2
exit 0
`;
}

/** Where a printer registers its stop: a test's `t`, or a hook's list of cleanups. */
export interface Owner {
  teardown(stop: () => Promise<unknown>): void;
}

export async function startIppPrinter(
  t: Owner,
  options: IppPrinterOptions = {},
): Promise<IppPrinter> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-ipp-printer-'));
  const command = join(dir, 'print');
  await writeFile(command, printCommand(dir));
  await chmod(command, 0o755);
  await writeFile(join(dir, 'impressions'), '1');
  await mkdir(join(dir, 'jobs'));
  await mkdir(join(dir, 'spool'));

  const port = await freePort();
  const formats = options.formats ?? ['application/pdf', 'image/pwg-raster', 'text/plain'];
  const printer: Process = spawnProcess(
    'ippeveprinter',
    [
      ...(options.twoSided ? ['-2'] : []),
      '-p',
      String(port),
      '-f',
      formats.join(','),
      '-c',
      command,
      '-d',
      join(dir, 'spool'),
      `Spool test ${port}`,
    ],
    { ...(process.env as Record<string, string>) },
  );
  const stop = async () => {
    await printer.stop();
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const uri = `ipp://127.0.0.1:${port}/ipp/print`;
  await answering(port).catch((error: Error) => {
    throw new Error(`${error.message}\nippeveprinter said:\n${printer.output()}`);
  });

  return {
    uri,
    async jobs() {
      const files = (await readdir(join(dir, 'jobs'))).sort();
      return Promise.all(
        files.map(async (file) => {
          const env = await readFile(join(dir, 'jobs', file), 'utf8');
          const attributes: Record<string, string> = {};
          for (const line of env.split('\n')) {
            const eq = line.indexOf('=');
            if (eq < 0) continue;
            const name = line.slice(4, eq).toLowerCase().replaceAll('_', '-');
            attributes[name] = line.slice(eq + 1);
          }
          return attributes;
        }),
      );
    },
    setImpressions: (count) => writeFile(join(dir, 'impressions'), String(count)),
    emptyTray: () => writeFile(join(dir, 'tray-empty'), ''),
    loadPaper: () => unlink(join(dir, 'tray-empty')),
    output: () => printer.output(),
    stop,
  };
}

/** Resolves once the printer answers HTTP on `port`. */
async function answering(port: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      await res.arrayBuffer();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`ippeveprinter did not answer: ${error}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
