/**
 * Spool's metrics, through the OpenTelemetry metrics API (served as Prometheus text by
 * lib/telemetry.ts). Names follow the semantic conventions where one exists (HTTP, RPC) and sit
 * under `spool.` otherwise; README.md lists them with their Prometheus names.
 *
 * The instruments are made on first use, from the meter provider registered by then: the
 * metrics API has no proxy, so an instrument made before telemetry starts would stay a no-op.
 */
import {
  type Counter,
  type Histogram,
  metrics,
  type ObservableGauge,
  type ObservableUpDownCounter,
} from '@opentelemetry/api';

/** Bucket boundaries, in seconds, for request and hop latencies. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Bucket boundaries, in seconds, for waits that can last as long as a printer is away. */
const WAIT_BUCKETS_S = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

export interface SpoolMetrics {
  /** Gateway requests, by `http.request.method`, `http.route`, `http.response.status_code`. */
  httpServerDuration: Histogram;
  /** gRPC calls served, by `rpc.service`, `rpc.method`, `rpc.grpc.status_code`. */
  rpcServerDuration: Histogram;
  /** Job transitions, by `spool.job.from` and `spool.job.to`. */
  jobTransitions: Counter;
  /** From a job's `queued` to the station's `received` (`sent`). */
  dispatchDuration: Histogram;
  /** From a job's creation to `printed`. */
  timeToPrint: Histogram;
  /** Messages not yet delivered to a durable consumer, by `messaging.destination.name` (the stream) and `messaging.consumer.group.name`. */
  consumerLag: ObservableGauge;
  /** Rows of an outbox not yet published, by `spool.outbox.table`. */
  outboxBacklog: ObservableGauge;
  /** Seconds since the oldest row of an outbox was written (0 when it is empty), by table. */
  outboxOldestAge: ObservableGauge;
  /** Webhook delivery attempts, by `spool.webhook.outcome`. */
  webhookAttempts: Counter;
  /** Station links held by this process. */
  stationsConnected: ObservableUpDownCounter;
  /** The agent's prints, by `spool.print.outcome` (`printed`, `failed`). */
  agentPrints: Counter;
  /** How long the agent's backend took to print a job. */
  agentPrintDuration: Histogram;
}

let made: SpoolMetrics | undefined;

export function spoolMetrics(): SpoolMetrics {
  if (made) return made;
  const meter = metrics.getMeter('spool');
  const seconds = (name: string, description: string, buckets: number[]) =>
    meter.createHistogram(name, {
      description,
      unit: 's',
      advice: { explicitBucketBoundaries: buckets },
    });
  made = {
    httpServerDuration: seconds(
      'http.server.request.duration',
      'Duration of HTTP requests served by the gateway',
      LATENCY_BUCKETS_S,
    ),
    rpcServerDuration: seconds(
      'rpc.server.duration',
      'Duration of gRPC calls served',
      LATENCY_BUCKETS_S,
    ),
    jobTransitions: meter.createCounter('spool.job.transitions', {
      description: 'Job status transitions',
    }),
    dispatchDuration: seconds(
      'spool.job.dispatch.duration',
      'Time from a job being queued to its station acknowledging it (sent)',
      WAIT_BUCKETS_S,
    ),
    timeToPrint: seconds(
      'spool.job.print.duration',
      'Time from a job being created to its station reporting it printed',
      WAIT_BUCKETS_S,
    ),
    consumerLag: meter.createObservableGauge('spool.consumer.lag', {
      description: 'Messages of a stream not yet delivered to its durable consumer',
      unit: '{message}',
    }),
    outboxBacklog: meter.createObservableGauge('spool.outbox.backlog', {
      description: 'Rows of an outbox table not yet published to NATS',
      unit: '{row}',
    }),
    outboxOldestAge: meter.createObservableGauge('spool.outbox.oldest.age', {
      description: 'Age of the oldest row of an outbox table not yet published (0 when empty)',
      unit: 's',
    }),
    webhookAttempts: meter.createCounter('spool.webhook.attempts', {
      description: 'Webhook delivery attempts by outcome',
    }),
    stationsConnected: meter.createObservableUpDownCounter('spool.stations.connected', {
      description: 'Station links held by this process',
      unit: '{station}',
    }),
    agentPrints: meter.createCounter('spool.agent.prints', {
      description: 'Jobs the agent handed to a printer, by outcome',
    }),
    agentPrintDuration: seconds(
      'spool.agent.print.duration',
      'Time the printer backend took to print a job',
      WAIT_BUCKETS_S,
    ),
  };
  return made;
}

/**
 * The process's CPU time (`process.cpu.time`, by `cpu.mode`) and resident memory
 * (`process.memory.usage`), as the semantic conventions name them. Written here from Node's own
 * counters: the one library that reports them (@opentelemetry/host-metrics) brings a system
 * information package of its own for two numbers Node hands out.
 */
export function observeProcess(): void {
  const meter = metrics.getMeter('spool');
  meter
    .createObservableCounter('process.cpu.time', {
      description: 'CPU time used by this process',
      unit: 's',
    })
    .addCallback((result) => {
      const { user, system } = process.cpuUsage();
      result.observe(user / 1e6, { 'cpu.mode': 'user' });
      result.observe(system / 1e6, { 'cpu.mode': 'system' });
    });
  meter
    .createObservableUpDownCounter('process.memory.usage', {
      description: 'Resident memory of this process',
      unit: 'By',
    })
    .addCallback((result) => result.observe(process.memoryUsage.rss()));
}

/** Seconds between two instants, for the histograms above. */
export function secondsBetween(from: Date, to: Date): number {
  return Math.max(0, (to.getTime() - from.getTime()) / 1000);
}
