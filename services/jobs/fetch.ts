/**
 * Content from a URI (`pdf_uri`, `raw_uri`): the jobs service fetches the document itself, with a
 * timeout and a size limit, following no redirects, and behind the SSRF guard that refuses
 * loopback, private and link-local addresses at connect time (outside `spool dev`).
 */
import { Agent, request } from 'undici';
import { invalid, SpoolError } from '../../lib/errors.js';
import { checkPublicUrl, createConnector, isBlockedAddressError } from '../../lib/ssrf.js';

export interface FetcherOptions {
  /** Allow http:// and non-public addresses (spool dev, tests). */
  allowInsecure: boolean;
  timeoutMs?: number;
}

export interface Fetcher {
  fetch(uri: string, maxBytes: number): Promise<Buffer>;
  close(): Promise<void>;
}

export function createFetcher(options: FetcherOptions): Fetcher {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const agent = new Agent({
    connect: createConnector({ guard: !options.allowInsecure, timeoutMs }),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  return {
    async fetch(uri, maxBytes) {
      const target = checkPublicUrl(uri, options.allowInsecure, 'content.uri');
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(target, {
          dispatcher: agent,
          method: 'GET',
          // undici's request() follows no redirect: a 3xx is refused below.
          headers: { 'user-agent': 'Spool-Fetch/1', accept: '*/*' },
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        if (
          isBlockedAddressError(err) ||
          isBlockedAddressError((err as { cause?: unknown }).cause)
        ) {
          throw invalid(`content.uri ${(err as Error).message}`, 'content.uri');
        }
        throw invalid(`content.uri could not be fetched: ${(err as Error).message}`, 'content.uri');
      }
      if (res.statusCode < 200 || res.statusCode > 299) {
        await res.body.dump();
        throw invalid(
          `content.uri answered ${res.statusCode}; only a 2xx is accepted (redirects are not followed)`,
          'content.uri',
        );
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        await res.body.dump();
        throw new SpoolError(
          'payload_too_large',
          `the document at content.uri is larger than ${maxBytes} bytes`,
          {
            param: 'content.uri',
          },
        );
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) {
          res.body.destroy();
          throw new SpoolError(
            'payload_too_large',
            `the document at content.uri is larger than ${maxBytes} bytes`,
            {
              param: 'content.uri',
            },
          );
        }
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks);
    },
    close: () => agent.close(),
  };
}
