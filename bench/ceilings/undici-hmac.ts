/**
 * Ceiling: what Spool's webhook sender does on the wire, and nothing else. An undici `request()`
 * POST of a stored 1.3 KiB event body with a `Service-Signature` HMAC-SHA256 header computed per
 * request, through a pooled Agent with the limits Spool sends with by default (16 connections per
 * origin, 256 requests in flight), spread over the receivers' origins the way 20 endpoints of an
 * organization are.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { epochMs } from '../clock.js';
import { type RateResult, rateResult } from './pg-insert.js';

/** A job event as the webhooks service stores and sends it. */
export function sampleEventBody(): Buffer {
  const id = randomUUID();
  const job = {
    id,
    org_id: randomUUID(),
    status: 'printed',
    status_detail: '',
    reference: 'bench-0000',
    title: 'bench',
    printer_id: randomUUID(),
    station_id: randomUUID(),
    live: true,
    options: { copies: 1 },
    content_type: 'text/plain',
    size: 84,
    attempt: 1,
    schedule_at: null,
    expire_at: null,
    reprint_of: null,
    content_deleted: false,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
  };
  return Buffer.from(
    JSON.stringify({
      type: 'job.printed',
      created_at: job.created_at,
      org_id: job.org_id,
      data: { job },
    }),
  );
}

export async function undiciHmacRate(p: {
  urls: string[];
  inFlight: number;
  connectionsPerOrigin: number;
  durationMs: number;
}): Promise<RateResult> {
  const agent = new Agent({
    connections: p.connectionsPerOrigin,
    pipelining: 1,
    keepAliveTimeout: 10_000,
  });
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const body = sampleEventBody();
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const started = epochMs();
  const end = started + p.durationMs;
  await Promise.all(
    Array.from({ length: p.inFlight }, async () => {
      while (epochMs() < end) {
        const url = p.urls[n++ % p.urls.length] as string;
        const t0 = epochMs();
        const t = Math.floor(Date.now() / 1000);
        const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
        try {
          const res = await request(url, {
            dispatcher: agent,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'user-agent': 'Spool-Webhooks/2',
              'service-delivery': randomUUID(),
              'service-delivery-attempt': '1',
              'service-signature': `t=${t},v1=${v1}`,
            },
            body,
          });
          await res.body.dump();
          if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(epochMs() - t0);
          else errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsedMs = epochMs() - started;
  await agent.close();
  return rateResult(latencies, errors, elapsedMs);
}
