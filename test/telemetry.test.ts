/**
 * Tracing, metrics and logs with real processes: every component a `spool serve` process and
 * `spool agent` printing to a file, all exporting spans over OTLP to a receiver in the test. One
 * job is followed from the gateway's POST to its `job.printed` webhook. The tests run one after
 * another, in this order: the metrics count that one job, and the last test adds another.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { spoolVersion } from '../lib/version.js';
import { CLUSTER_OPERATOR_TOKEN, type Cluster, startCluster } from './helpers/cluster.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './helpers/otlp.js';
import { freePort } from './helpers/ports.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { type SpoolProcess, spawnSpool } from './helpers/spool.js';
import { call, eventually } from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

interface World {
  cluster: Cluster;
  otlp: OtlpReceiver;
  receiver: Receiver;
  agent: SpoolProcess;
  agentMetricsUrl: string;
  orgId: string;
  key: string;
  jobId: string;
  dirs: string[];
}

let world: World | undefined;
/** What the before hook started, stopped last first even when the hook fails midway. */
const startedHere: Array<() => Promise<unknown>> = [];

function otelEnv(endpoint: string): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_LOGS_EXPORTER: 'none',
  };
}

test.before(async () => {
  const otlp = await startOtlpReceiver();
  startedHere.push(() => otlp.close());
  const receiver = await startReceiver();
  startedHere.push(() => receiver.close());
  const cluster = await startCluster({
    env: otelEnv(otlp.endpoint),
    webhooksEnv: { WEBHOOK_POLL_MS: '100' },
  });
  startedHere.push(() => cluster.stop());
  const admin = { token: CLUSTER_OPERATOR_TOKEN };
  const org = await call<{ org: { id: string } }>(cluster.url, 'POST', '/admin/v1/orgs', {
    ...admin,
    body: { name: 'Traced Print' },
  });
  const orgId = org.body.org.id;
  const key = await call<{ secret: string }>(cluster.url, 'POST', `/admin/v1/orgs/${orgId}/keys`, {
    ...admin,
    body: { mode: 'live', scopes: SCOPES },
  });
  const station = await call<{ token: string }>(
    cluster.url,
    'POST',
    `/admin/v1/orgs/${orgId}/stations`,
    { ...admin, body: { name: 'Front desk' } },
  );
  await webhookAdmin(cluster.url, CLUSTER_OPERATOR_TOKEN, orgId).create(receiver.url, [
    'job.printed',
  ]);
  const out = await mkdtemp(join(tmpdir(), 'spool-otel-out-'));
  const state = await mkdtemp(join(tmpdir(), 'spool-otel-agent-'));
  startedHere.push(() => rm(out, { recursive: true, force: true }));
  startedHere.push(() => rm(state, { recursive: true, force: true }));
  const agentMetricsPort = await freePort();
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      cluster.linkAddress,
      '--token',
      station.body.token,
      '--state-dir',
      state,
      '--printer',
      `desk=file:${out}`,
    ],
    { LOG_LEVEL: 'info', METRICS_PORT: String(agentMetricsPort), ...otelEnv(otlp.endpoint) },
  );
  startedHere.push(() => agent.stop());
  const printers = await eventually(
    () =>
      call<{ printers: Array<{ id: string; station_online: boolean }> }>(
        cluster.url,
        'GET',
        `/v1/orgs/${orgId}/printers`,
        { token: key.body.secret },
      ),
    (r) => r.body.printers.some((p) => p.station_online),
    60_000,
  );
  const job = await call<{ job: { id: string } }>(cluster.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
    token: key.body.secret,
    body: {
      printer_id: printers.body.printers[0]?.id,
      content: { type: 'text', data: 'Traced from end to end' },
    },
  });
  const jobId = job.body.job.id;
  world = {
    cluster,
    otlp,
    receiver,
    agent,
    agentMetricsUrl: `http://127.0.0.1:${agentMetricsPort}/metrics`,
    orgId,
    key: key.body.secret,
    jobId,
    dirs: [out, state],
  };
  await receiver.until((r) => r.some((q) => q.body.toString().includes(jobId)), 60_000);
});

test.after.always(async () => {
  for (let stop = startedHere.pop(); stop; stop = startedHere.pop()) await stop().catch(() => {});
  // And the directories the tests added.
  for (const dir of world?.dirs ?? []) await rm(dir, { recursive: true, force: true });
});

function started(): World {
  if (!world) throw new Error('the traced system did not start');
  return world;
}

/** The span's ancestors and itself, root first. */
function lineage(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const line = [span];
  for (let s = span; s.parentSpanId; ) {
    const parent = byId.get(s.parentSpanId);
    if (!parent) throw new Error(`${s.name} (${s.service}) has a parent that was never exported`);
    line.unshift(parent);
    s = parent;
  }
  return line;
}

/** Whether `names` appear in `line` in this order (others may come between). */
function inOrder(line: ReceivedSpan[], names: string[]): boolean {
  let i = 0;
  for (const span of line) if (span.name === names[i]) i++;
  return i === names.length;
}

test.serial(
  'one trace follows a job from the POST through the agent’s print to the webhook attempt',
  async (t) => {
    const { otlp, jobId } = started();
    const isAttempt = (s: ReceivedSpan) =>
      s.name === 'deliver webhook' && s.attributes['spool.webhook.event_type'] === 'job.printed';
    const isPrint = (s: ReceivedSpan) =>
      s.name === 'print job' && s.attributes['spool.job.id'] === jobId;
    // Each process exports on its own schedule: wait until both lines of descent are complete.
    const complete = (all: ReceivedSpan[]) =>
      [all.find(isAttempt), all.find(isPrint)].every((span) => {
        if (!span) return false;
        try {
          return lineage(all, span).length > 1;
        } catch {
          return false;
        }
      });
    const spans = await otlp.until(complete);

    const post = spans.find(
      (s) => s.service === 'spool-gateway' && s.name === 'POST /v1/orgs/:org/jobs',
    );
    if (!post) return t.fail('no gateway span for the POST');
    t.is(post.kind, 2, 'the gateway span is a server span');
    t.is(post.parentSpanId, '', 'the POST starts the trace');
    t.is(post.attributes['http.route'], '/v1/orgs/:org/jobs');
    t.is(post.attributes['http.response.status_code'], 201);

    const print = spans.find(isPrint);
    if (!print) return t.fail('no print span from the agent');
    t.is(print.service, 'spool-agent');
    t.is(print.traceId, post.traceId, 'the agent’s print is in the POST’s trace');
    const toPrint = lineage(spans, print);
    t.is(toPrint[0], post, 'the print descends from the POST');
    t.true(
      inOrder(toPrint, [
        'POST /v1/orgs/:org/jobs',
        'grpc.spool.v1.JobsService/CreateJobs',
        'publish dispatch',
        'push job',
        'print job',
      ]),
      toPrint.map((s) => `${s.service}: ${s.name}`).join(' → '),
    );

    const attempt = spans.find(isAttempt) as ReceivedSpan;
    t.is(attempt.service, 'spool-webhooks');
    t.is(attempt.traceId, post.traceId, 'the webhook attempt is in the POST’s trace');
    const toAttempt = lineage(spans, attempt);
    t.is(toAttempt[0], post);
    t.true(
      inOrder(toAttempt, [
        'POST /v1/orgs/:org/jobs',
        'push job',
        'print job',
        'publish reports',
        'process reports',
        'publish events',
        'process events',
        'deliver webhook',
      ]),
      toAttempt.map((s) => `${s.service}: ${s.name}`).join(' → '),
    );
    t.true(
      spans.some((s) => s.parentSpanId === attempt.spanId && s.kind === 3),
      'the attempt’s HTTP request is a client span below it',
    );
    t.is(attempt.attributes['http.response.status_code'], 200);
    t.is(attempt.attributes['spool.webhook.outcome'], 'succeeded');

    // The database work of the POST is in the trace too.
    t.true(
      spans.some(
        (s) =>
          s.traceId === post.traceId &&
          s.service === 'spool-jobs' &&
          s.attributes['db.system.name'] === 'postgresql',
      ),
    );
  },
);

test.serial('a request that brings its own traceparent continues the caller’s trace', async (t) => {
  const { cluster, otlp } = started();
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const res = await fetch(`${cluster.url}/v1/openapi.json`, {
    headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  t.is(res.status, 200);
  const spans = await otlp.until((all) => all.some((s) => s.traceId === traceId));
  const span = spans.find((s) => s.traceId === traceId) as ReceivedSpan;
  t.is(span.service, 'spool-gateway');
  t.is(span.parentSpanId, callerSpan);
});

test.serial('log lines written inside a traced operation carry its trace id', async (t) => {
  const { otlp, agent, jobId } = started();
  const spans = await otlp.until((all) =>
    all.some((s) => s.name === 'print job' && s.attributes['spool.job.id'] === jobId),
  );
  const print = spans.find(
    (s) => s.name === 'print job' && s.attributes['spool.job.id'] === jobId,
  ) as ReceivedSpan;
  const line = agent
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === 'job printed' && l.job_id === jobId);
  t.is(line?.trace_id, print.traceId);
  t.is(line?.span_id, print.spanId);
});

test.serial('every process serves its metrics in the Prometheus format', async (t) => {
  const { cluster, agentMetricsUrl } = started();
  const scrape = async (url: string) => {
    const res = await fetch(url);
    t.is(res.status, 200, url);
    t.regex(res.headers.get('content-type') ?? '', /text\/plain/);
    return res.text();
  };
  const gateway = await scrape(cluster.metricsUrls.gateway);
  const onApi = await fetch(`${cluster.url}/metrics`);
  t.is(onApi.status, 404, 'the public API port does not serve /metrics');
  t.regex(
    gateway,
    /http_server_request_duration_count\{[^}]*http_request_method="POST"[^}]*http_response_status_code="201"[^}]*http_route="\/v1\/orgs\/:org\/jobs"[^}]*\} 1/,
  );

  const jobs = await eventually(
    () => scrape(cluster.metricsUrls.jobs),
    (text) => /spool_job_print_duration_count\{[^}]*\} 1/.test(text),
    10_000,
  );
  t.regex(
    jobs,
    /spool_job_transitions_total\{[^}]*spool_job_from="sent",spool_job_to="printed"[^}]*\} 1/,
  );
  t.regex(jobs, /spool_job_dispatch_duration_count\{[^}]*\} 1/);
  t.regex(jobs, /rpc_server_duration_count\{[^}]*rpc_method="CreateJobs"[^}]*\} 1/);
  t.regex(jobs, /spool_consumer_lag\{[^}]*messaging_destination_name="REPORTS"[^}]*\} 0/);

  const stations = await scrape(cluster.metricsUrls.stations);
  t.regex(stations, /spool_stations_connected\{[^}]*\} 1/);

  // The attempt is counted once the receiver's answer is in, a moment after it got the request.
  const webhooks = await eventually(
    () => scrape(cluster.metricsUrls.webhooks),
    (text) => text.includes('spool_webhook_attempts_total'),
    10_000,
  );
  t.regex(
    webhooks,
    /spool_webhook_attempts_total\{[^}]*spool_webhook_outcome="succeeded"[^}]*\} 1/,
  );
  t.regex(webhooks, /spool_consumer_lag\{[^}]*messaging_destination_name="EVENTS"[^}]*\} 0/);

  const agent = await scrape(agentMetricsUrl);
  t.regex(agent, /spool_agent_prints_total\{[^}]*spool_print_outcome="printed"[^}]*\} 1/);
  t.regex(agent, /spool_agent_print_duration_count\{[^}]*\} 1/);

  // The runtime's and the process's own figures, from every process.
  for (const [component, text] of Object.entries({ gateway, jobs, stations, webhooks, agent })) {
    for (const name of [
      /nodejs_eventloop_delay_p99\{/,
      /v8js_memory_heap_used\{/,
      /process_cpu_time_total\{[^}]*cpu_mode="user"[^}]*\} [\d.e-]+/,
      /process_memory_usage\{[^}]*\} [1-9]/,
    ]) {
      t.regex(text, name, component);
    }
  }
  // Each service with an outbox reports what is left in it.
  t.regex(jobs, /spool_outbox_backlog\{[^}]*spool_outbox_table="jobs_outbox"[^}]*\} \d+/);
  t.regex(stations, /spool_outbox_oldest_age\{[^}]*spool_outbox_table="stations_outbox"/);

  // Each process says which Spool it is, in its metrics and its first lines.
  const version = spoolVersion();
  t.regex(version, /^\d+\.\d+\.\d+/);
  for (const [component, text] of Object.entries({ gateway, jobs, stations, webhooks, agent })) {
    t.regex(text, new RegExp(`target_info\\{[^}]*service_version="${version}"`), component);
  }
  for (const [component, proc] of cluster.processes) {
    const started = proc
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => /serving gRPC|gateway listening/.test(String(l.msg)));
    t.is(started?.version, version, component);
  }
});

test.serial(
  'a job that waited for its station is printed in the POST’s trace when the station comes back',
  async (t) => {
    const { cluster, otlp, orgId, key, dirs } = started();
    const station = await call<{ station: { id: string }; token: string }>(
      cluster.url,
      'POST',
      `/admin/v1/orgs/${orgId}/stations`,
      { token: CLUSTER_OPERATOR_TOKEN, body: { name: 'Back office' } },
    );
    const out = await mkdtemp(join(tmpdir(), 'spool-otel-out-'));
    const state = await mkdtemp(join(tmpdir(), 'spool-otel-agent-'));
    dirs.push(out, state);
    const args = ['agent', '--server', cluster.linkAddress, '--token', station.body.token];
    const start = () =>
      spawnSpool([...args, '--state-dir', state, '--printer', `back=file:${out}`], {
        LOG_LEVEL: 'info',
        ...otelEnv(otlp.endpoint),
      });
    const printers = (online: boolean) =>
      eventually(
        () =>
          call<{ printers: Array<{ id: string; station_online: boolean }> }>(
            cluster.url,
            'GET',
            `/v1/orgs/${orgId}/printers?station_id=${station.body.station.id}`,
            { token: key },
          ),
        (r) => r.body.printers.some((p) => p.station_online === online),
        60_000,
      );
    const first = start();
    const printer = (await printers(true)).body.printers[0]?.id;
    await first.stop();
    await printers(false);

    // No link holds the station: the job waits, and its dispatch message reaches no one.
    const job = await call<{ job: { id: string } }>(cluster.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: { printer_id: printer, content: { type: 'text', data: 'Printed after a wait' } },
    });
    const second = start();
    t.teardown(() => second.stop());

    const isPrint = (s: ReceivedSpan) =>
      s.name === 'print job' && s.attributes['spool.job.id'] === job.body.job.id;
    const spans = await otlp.until((all) => {
      const print = all.find(isPrint);
      if (!print) return false;
      try {
        return lineage(all, print)[0]?.parentSpanId === '';
      } catch {
        return false;
      }
    });
    const toPrint = lineage(spans, spans.find(isPrint) as ReceivedSpan);
    t.is(toPrint[0]?.name, 'POST /v1/orgs/:org/jobs');
    t.true(
      inOrder(toPrint, ['POST /v1/orgs/:org/jobs', 'push job', 'print job']),
      toPrint.map((s) => `${s.service}: ${s.name}`).join(' → '),
    );
    t.false(
      toPrint.some((s) => s.name === 'publish dispatch'),
      'the offer came from the pending jobs, continuing the trace kept with the job',
    );
  },
);
