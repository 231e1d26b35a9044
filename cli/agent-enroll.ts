/**
 * `spool agent enroll --server HOST:PORT CODE`: exchanges a station's enrollment code for the
 * station and its device token over the station link's address (`StationEnrollment.Enroll`, served
 * beside the link), and keeps the token in the state directory (`device-token`, readable by its
 * owner alone), where `spool agent` finds it when nothing else gives a token. The agent then needs
 * one address and no token typed anywhere.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { problemList } from '../agent/config.js';
import { serverProblems, splitServers } from '../agent/link.js';
import type { Env } from '../lib/config.js';
import { type AgentCommonFlags, agentSettings } from './agent-settings.js';

/** The file in the state directory that holds the token `enroll` was given. */
export const STATE_TOKEN_FILE = 'device-token';

/** How long one server may take to answer. */
const ENROLL_DEADLINE_MS = 15_000;

export interface EnrollFlags extends AgentCommonFlags {
  server?: string;
  tls?: boolean;
  ca?: string;
}

export interface Enrolled {
  stationId: string;
  stationName: string;
  orgId: string;
  server: string;
  tokenFile: string;
}

/** Where a token of the state directory is kept: the file, when there is one. */
export function stateTokenFile(stateDir: string): string {
  return join(stateDir, STATE_TOKEN_FILE);
}

/** `spool agent enroll`: the station enrolled and where its token is kept. */
export async function enrollStation(code: string, flags: EnrollFlags, env: Env): Promise<Enrolled> {
  const s = await agentSettings(flags, env);
  const problems: string[] = [];
  const server = flags.server ?? s.file?.server;
  if (!server) {
    problems.push(
      'give the server address: --server HOST:PORT (the station link, port 7070 in spool dev), or server in the configuration file',
    );
  } else if (flags.server !== undefined) {
    problems.push(...serverProblems(flags.server));
  }
  // A token given otherwise would win over the enrolled one, which the agent would then ignore.
  const given = s.env.token
    ? 'SPOOL_DEVICE_TOKEN'
    : s.file?.token
      ? `token in ${s.file.path}`
      : s.file?.tokenFile
        ? `token_file in ${s.file.path}`
        : undefined;
  if (given) {
    problems.push(
      `${given} already gives the agent a token, which it would use rather than the enrolled one: remove it first`,
    );
  }
  const tokenFile = stateTokenFile(s.stateDir);
  if (existsSync(tokenFile)) {
    problems.push(
      `${tokenFile} holds the token of a station enrolled already: to make this machine another station, remove that file first, or give another --state-dir`,
    );
  }
  if (!server || problems.length > 0) throw new Error(problemList('cannot enroll', problems));

  const tls = flags.tls || flags.ca !== undefined || s.file?.tls?.enabled === true;
  const caFile = flags.ca ?? s.file?.tls?.ca;
  const ca = caFile === undefined ? undefined : await readFile(caFile);
  const [{ credentials, Metadata, status }, { StationEnrollmentClient }] = await Promise.all([
    import('@grpc/grpc-js'),
    import('../gen/spool/v1/stations.js'),
  ]);
  const channel = tls ? credentials.createSsl(ca ?? null) : credentials.createInsecure();
  const unreachable: string[] = [];
  // Each address in turn, until one answers: a refused code is the answer, not a reason to go on.
  for (const address of splitServers(server)) {
    const client = new StationEnrollmentClient(address, channel);
    try {
      const answer = await new Promise<{
        station?: { id: string; name: string; orgId: string };
        token: string;
      }>((resolve, reject) =>
        client.enroll(
          { code },
          new Metadata(),
          { deadline: new Date(Date.now() + ENROLL_DEADLINE_MS) },
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      );
      if (!answer.station || !answer.token.startsWith('svc_dev_')) {
        throw new Error(`the server at ${address} answered without a station and its token`);
      }
      await keepToken(s.stateDir, tokenFile, answer.token);
      return {
        stationId: answer.station.id,
        stationName: answer.station.name,
        orgId: answer.station.orgId,
        server: address,
        tokenFile,
      };
    } catch (err) {
      const e = err as { code?: number; details?: string; message: string };
      if (e.code === status.UNAVAILABLE || e.code === status.DEADLINE_EXCEEDED) {
        unreachable.push(`${address}: ${e.details || e.message}`);
        continue;
      }
      if (e.code === status.UNIMPLEMENTED) {
        throw new Error(
          `the server at ${address} does not enroll stations: is it Spool's station link (STATION_PORT), and is that Spool recent enough?`,
        );
      }
      if (e.code === undefined) throw err;
      throw new Error(`the server at ${address} refused the code: ${e.details || e.message}`);
    } finally {
      client.close();
    }
  }
  throw new Error(
    problemList(
      "could not reach Spool's station link (is it HOST:PORT of STATION_PORT, 7070 in spool dev?)",
      unreachable,
    ),
  );
}

/** Writes the token where only its owner reads it, whole or not at all. */
async function keepToken(stateDir: string, tokenFile: string, token: string): Promise<void> {
  await mkdir(stateDir, { recursive: true });
  const partial = `${tokenFile}.new`;
  await rm(partial, { force: true });
  await writeFile(partial, `${token}\n`, { mode: 0o600, flag: 'wx' });
  await rename(partial, tokenFile);
}

/**
 * What `enroll` prints once done; `command` is how the agent is run (`spool agent`, or the
 * packaged `spool-agent`), `stateDir` the `--state-dir` given, if any.
 */
export function formatEnrolled(e: Enrolled, command: string, stateDir?: string): string {
  const dir = stateDir === undefined ? '' : ` --state-dir ${stateDir}`;
  return (
    `enrolled: station "${e.stationName}" (${e.stationId}) of organization ${e.orgId}, through ${e.server}\n` +
    `its device token is kept in ${e.tokenFile}; run the agent with the same state directory and no token:\n` +
    `  ${command} --server ${e.server}${dir} --printer NAME=BACKEND\n`
  );
}
