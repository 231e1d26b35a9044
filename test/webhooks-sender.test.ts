/**
 * One attempt on the wire (services/webhooks/delivery.ts), against receivers that answer badly:
 * the status is what counts, and the body is read only as far as the log keeps it.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { createSender, RESPONSE_BODY_LIMIT } from '../services/webhooks/delivery.js';

const TIMEOUT_MS = 1_000;

async function receiver(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook?x=1`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function sender(t: { teardown(fn: () => Promise<void>): void }) {
  const s = createSender({ timeoutMs: TIMEOUT_MS, allowInsecure: true, connectionsPerOrigin: 1 });
  t.teardown(() => s.close());
  return (url: string) =>
    s.send({
      url,
      deliveryId: 'd1',
      attempt: 1,
      body: Buffer.from('{"type":"ping"}'),
      secrets: ['whsec_c2VjcmV0'],
      at: new Date(),
    });
}

test('a 2xx whose body then stops counts as answered, and the log keeps what came', async (t) => {
  const r = await receiver((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('received, ');
    // …and never ends.
  });
  t.teardown(r.close);
  const result = await sender(t)(r.url);
  t.true(result.succeeded);
  t.is(result.statusCode, 200);
  t.is(result.responseBody, 'received, ');
  t.is(result.error, '');
});

test('an endless answer is read only as far as the log keeps it', async (t) => {
  let closed: (() => void) | undefined;
  const dropped = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const r = await receiver((_req, res) => {
    res.writeHead(503, { 'retry-after': '120' });
    const chunk = 'y'.repeat(512);
    const pump = setInterval(() => res.write(chunk), 5);
    res.on('close', () => {
      clearInterval(pump);
      closed?.();
    });
  });
  t.teardown(r.close);
  const result = await sender(t)(r.url);
  t.false(result.succeeded);
  t.is(result.statusCode, 503);
  t.is(result.error, 'the receiver answered 503');
  t.is(result.retryAfter, '120');
  t.is(result.responseBody, 'y'.repeat(RESPONSE_BODY_LIMIT));
  t.true(result.durationMs < TIMEOUT_MS, 'it did not wait for the timeout');
  // The connection is dropped rather than drained: the receiver sees it close.
  await dropped;
  t.pass();
});

test('no status within the timeout fails the attempt, and the path and query are sent', async (t) => {
  const paths: string[] = [];
  const r = await receiver((req) => {
    paths.push(req.url ?? '');
    // Never answers.
  });
  t.teardown(r.close);
  const result = await sender(t)(r.url);
  t.false(result.succeeded);
  t.is(result.statusCode, 0);
  t.is(result.error, `no answer within ${TIMEOUT_MS} ms`);
  t.deepEqual(paths, ['/hook?x=1']);
});

test('a redirect is not followed, and its location is named', async (t) => {
  const r = await receiver((_req, res) => {
    res.writeHead(301, { location: 'https://elsewhere.example/hook' });
    res.end('moved');
  });
  t.teardown(r.close);
  const result = await sender(t)(r.url);
  t.false(result.succeeded);
  t.is(result.statusCode, 301);
  t.is(result.error, 'redirect to https://elsewhere.example/hook not followed');
  t.is(result.responseBody, 'moved');
});
