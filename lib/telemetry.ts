/**
 * OpenTelemetry for one Spool process. It starts before any application module is imported (see
 * bin/spool.js), because the pg and gRPC instrumentations hook those modules as they load.
 *
 * - Traces go out over OTLP when the standard variables ask for them (`OTEL_TRACES_EXPORTER`, or
 *   an `OTEL_EXPORTER_OTLP_ENDPOINT`); the SDK reads the rest of `OTEL_*` itself. Without them no
 *   module is hooked and the API's no-op tracer is all that runs.
 * - Metrics are always kept in the process and served in the Prometheus text format; see
 *   {@link Telemetry.metricsHandler}. `OTEL_SDK_DISABLED=true` turns both off. Beside Spool's own
 *   (lib/metrics.ts) come the runtime's (event loop delay and utilization, garbage collection,
 *   heap: @opentelemetry/instrumentation-runtime-node) and the process's CPU time and memory.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { register } from 'node:module';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Env } from './config.js';
import { observeProcess } from './metrics.js';
import { setTracing } from './tracing.js';
import { spoolVersion } from './version.js';

export interface Telemetry {
  /** Answers a scrape with every metric of this process; undefined when telemetry is disabled. */
  readonly metricsHandler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  /** Flushes spans not yet exported, then stops. */
  shutdown(): Promise<void>;
}

const disabled: Telemetry = {
  metricsHandler: undefined,
  shutdown: async () => {},
};

let active: Telemetry = disabled;

/** The telemetry this process started, or a disabled one. */
export function telemetry(): Telemetry {
  return active;
}

/** Whether the environment asks for traces to be exported. */
function tracingRequested(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts telemetry for a process named `serviceName` (`OTEL_SERVICE_NAME` wins). Call it once,
 * before importing the modules it instruments.
 */
export async function startTelemetry(env: Env, serviceName: string): Promise<Telemetry> {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return disabled;
  const name = env.OTEL_SERVICE_NAME || serviceName;
  // Metrics' target_info and every span carry the version, to tell a rollout's two apart.
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: name,
    [ATTR_SERVICE_VERSION]: spoolVersion(),
  });
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const metricsHandler = prometheus.getMetricsRequestHandler.bind(prometheus);

  if (!tracingRequested(env)) {
    const provider = new MeterProvider({
      resource,
      readers: [prometheus],
    });
    metrics.setGlobalMeterProvider(provider);
    const runtime = new RuntimeNodeInstrumentation();
    runtime.setMeterProvider(provider);
    observeProcess();
    active = {
      metricsHandler,
      shutdown: async () => {
        runtime.disable();
        await provider.shutdown();
      },
    };
    return active;
  }

  // ESM modules are hooked through import-in-the-middle, whose loader must be in place before
  // they are imported; the SDK and instrumentations themselves are loaded after it.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { GrpcInstrumentation }, { PgInstrumentation }, { UndiciInstrumentation }] =
    await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/instrumentation-grpc'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-undici'),
    ]);
  const sdk = new NodeSDK({
    serviceName: name,
    resource,
    metricReaders: [prometheus],
    instrumentations: [
      // Health checks every few seconds would bury the traces worth reading.
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
      // Queries outside any operation (the outbox relay's polls) start no trace of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      new RuntimeNodeInstrumentation(),
    ],
  });
  sdk.start();
  observeProcess();
  setTracing(true);
  active = { metricsHandler, shutdown: () => sdk.shutdown() };
  return active;
}

/**
 * Serves `GET /metrics` on its own port, apart from any API: the gRPC services', the agent's, and the
 * gateway's, whose API port is public. Serves nothing, and resolves undefined, when `port` is 0 or
 * telemetry is disabled.
 */
export async function serveMetrics(
  host: string,
  port: number,
): Promise<{ server: Server; port: number } | undefined> {
  const handler = active.metricsHandler;
  if (port === 0 || !handler) return undefined;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') return handler(req, res);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}
