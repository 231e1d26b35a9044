/**
 * The Helm chart (charts/spool): rendered with `helm template` for the default values and for the
 * production-like values in ci/production-values.yaml, linted with `helm lint`, and the rendered
 * objects checked against what Spool's processes need (cli/config.ts) and how they drain.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { parseAllDocuments } from 'yaml';
import * as configs from '../cli/config.js';
import type { Variable } from '../lib/config.js';
import { LIVENESS_SERVICE } from '../lib/grpc.js';
import { CHART_DIR, helm } from './helpers/helm.js';

const PRODUCTION = join(CHART_DIR, 'ci', 'production-values.yaml');
const MULTI_REGION = join(CHART_DIR, 'ci', 'multi-region-values.yaml');
const COMPONENTS = ['gateway', 'accounts', 'jobs', 'stations', 'webhooks'] as const;
const SERVICES = COMPONENTS.filter((c) => c !== 'gateway');
/** Variables whose values are secret: they must come from a Secret, never be written inline. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PRIVATE|_KEY$|DATABASE_URL|CREDENTIALS/;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  grpc?: { port: number; service?: string };
  periodSeconds?: number;
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  ports?: Array<{ name: string; containerPort: number }>;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  securityContext?: Record<string, unknown>;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
interface PodSpec {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  volumes?: Array<{ name: string; emptyDir?: unknown; secret?: { secretName: string } }>;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

async function render(args: string[] = [], release = 'spool'): Promise<K8sObject[]> {
  const res = await helm(['template', release, CHART_DIR, '--namespace', 'print', ...args]);
  if (res.code !== 0) throw new Error(`helm template failed:\n${res.stderr}`);
  return parseAllDocuments(res.stdout)
    .map((doc) => doc.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

interface ServicePort {
  name: string;
  port: number;
  targetPort: string | number;
  appProtocol?: string;
}
interface ServiceSpec {
  clusterIP?: string;
  selector: Record<string, string>;
  ports: ServicePort[];
}
interface ServiceMonitorSpec {
  selector: { matchLabels: Record<string, string> };
  namespaceSelector?: { matchNames?: string[] };
  endpoints: Array<{ port: string; path: string; interval?: string; scrapeTimeout?: string }>;
}
interface NetworkPolicyRule {
  ports: Array<{ port: string | number; protocol: string }>;
  from?: unknown[];
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) {
    const names = objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ');
    throw new Error(`no ${kind}/${name} among ${names}`);
  }
  return found;
}

function podSpec(o: K8sObject): PodSpec {
  if (o.kind === 'Pod') return o.spec as unknown as PodSpec;
  return (o.spec as { template: { spec: PodSpec } }).template.spec;
}

/** Whether `labels` carry every label of a matchLabels selector. */
function matches(selector: Record<string, string>, labels: Record<string, string> | undefined) {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/**
 * What a ServiceMonitor scrapes, as the Prometheus Operator resolves it: each Service its selector
 * picks that has a port named as an endpoint's, with that endpoint's path.
 */
function scrapeTargets(objects: K8sObject[], monitor: K8sObject) {
  const spec = monitor.spec as unknown as ServiceMonitorSpec;
  return objects
    .filter((o) => o.kind === 'Service' && matches(spec.selector.matchLabels, o.metadata.labels))
    .flatMap((svc) =>
      spec.endpoints.flatMap((endpoint) => {
        const port = (svc.spec as unknown as ServiceSpec).ports.find(
          (p) => p.name === endpoint.port,
        );
        return port ? [{ service: svc.metadata.name, port, path: endpoint.path }] : [];
      }),
    );
}

function withPods(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => ['Deployment', 'Job', 'Pod'].includes(o.kind));
}

function env(container: Container): Map<string, EnvVar> {
  return new Map((container.env ?? []).map((e) => [e.name, e]));
}

function only<T>(items: T[] | undefined, what: string): T {
  if (items?.length !== 1) throw new Error(`expected one ${what}, got ${items?.length ?? 0}`);
  return items[0] as T;
}

/** The variables a config spec of cli/config.ts requires (those without a default). */
function required(spec: Record<string, Variable<unknown>>): string[] {
  return Object.values(spec)
    .filter((v) => v.fallback === undefined)
    .map((v) => v.name);
}

async function valuesFile(t: ExecutionContext, yaml: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-chart-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'values.yaml');
  await writeFile(file, yaml);
  return file;
}

for (const [label, args] of [
  ['the default values', []],
  ['the production-like values', ['-f', PRODUCTION]],
  ['the multi-region values', ['-f', MULTI_REGION]],
] as const) {
  test(`helm lint passes with ${label}`, async (t) => {
    const res = await helm(['lint', '--strict', CHART_DIR, ...args]);
    t.is(res.code, 0, res.stdout + res.stderr);
    t.regex(res.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  test(`${label} render a Deployment, PodDisruptionBudget and Service per component`, async (t) => {
    const objects = await render([...args]);
    for (const component of COMPONENTS) {
      const name = `spool-${component}`;
      const deployment = find(objects, 'Deployment', name);
      const container = only(podSpec(deployment).containers, 'container');
      t.deepEqual(container.args, ['serve', component], name);
      t.is(deployment.metadata.labels?.['app.kubernetes.io/component'], component);
      t.is(deployment.metadata.labels?.['app.kubernetes.io/name'], 'spool');
      t.is(deployment.metadata.labels?.['app.kubernetes.io/instance'], 'spool');
      find(objects, 'PodDisruptionBudget', name);
      find(objects, 'Service', name);
      const spread = podSpec(deployment) as unknown as {
        topologySpreadConstraints?: Array<{ topologyKey: string }>;
      };
      t.deepEqual(
        spread.topologySpreadConstraints?.map((c) => c.topologyKey),
        ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'],
      );
    }
  });

  test(`${label}: the gateway is probed over HTTP and every service with gRPC health`, async (t) => {
    const objects = await render([...args]);
    const gateway = only(
      podSpec(find(objects, 'Deployment', 'spool-gateway')).containers,
      'container',
    );
    const http = gateway.ports?.find((p) => p.name === 'http');
    t.is(http?.containerPort, Number(env(gateway).get('PORT')?.value));
    t.deepEqual(gateway.readinessProbe?.httpGet, { path: '/readyz', port: 'http' });
    t.deepEqual(gateway.livenessProbe?.httpGet, { path: '/healthz', port: 'http' });
    t.deepEqual(gateway.startupProbe?.httpGet, { path: '/healthz', port: 'http' });
    for (const service of SERVICES) {
      const container = only(
        podSpec(find(objects, 'Deployment', `spool-${service}`)).containers,
        'container',
      );
      const grpcPort = container.ports?.find((p) => p.name === 'grpc')?.containerPort;
      t.is(grpcPort, Number(env(container).get('GRPC_PORT')?.value), service);
      // Readiness (and startup) ask for the server's status, which drains and follows the
      // database and NATS; liveness only for the process answering.
      t.deepEqual(container.readinessProbe?.grpc, { port: grpcPort }, service);
      t.deepEqual(container.startupProbe?.grpc, { port: grpcPort }, service);
      t.deepEqual(container.livenessProbe?.grpc, { port: grpcPort, service: LIVENESS_SERVICE });
      t.is(container.readinessProbe?.httpGet, undefined);
    }
  });

  test(`${label}: every service serves /metrics on a metrics port (METRICS_PORT), which its Service exposes`, async (t) => {
    const objects = await render([...args]);
    for (const service of SERVICES) {
      const container = only(
        podSpec(find(objects, 'Deployment', `spool-${service}`)).containers,
        'container',
      );
      const metricsPort = Number(env(container).get('METRICS_PORT')?.value);
      t.is(metricsPort, 9464, `${service}: METRICS_PORT`);
      t.is(container.ports?.find((p) => p.name === 'metrics')?.containerPort, metricsPort, service);
      const ports = container.ports?.map((p) => p.containerPort) ?? [];
      t.is(new Set(ports).size, ports.length, `${service}: container ports are distinct`);
      const spec = find(objects, 'Service', `spool-${service}`).spec as unknown as ServiceSpec;
      t.is(spec.ports[0]?.name, 'grpc', `${service}: gRPC stays the Service's first port`);
      t.like(
        spec.ports.find((p) => p.name === 'metrics'),
        { port: metricsPort, targetPort: 'metrics', appProtocol: 'http' },
        service,
      );
    }
    const gateway = only(
      podSpec(find(objects, 'Deployment', 'spool-gateway')).containers,
      'container',
    );
    t.is(env(gateway).get('METRICS_PORT')?.value, '9464', 'the gateway: METRICS_PORT');
    t.deepEqual(
      gateway.ports?.map((p) => [p.name, p.containerPort]),
      [
        ['http', 8080],
        ['metrics', 9464],
      ],
    );
    const publicSpec = find(objects, 'Service', 'spool-gateway').spec as unknown as ServiceSpec;
    t.deepEqual(
      publicSpec.ports.map((p) => p.name),
      ['http'],
      'the public Service carries no metrics',
    );
    const metricsSpec = find(objects, 'Service', 'spool-gateway-metrics')
      .spec as unknown as ServiceSpec;
    t.like(metricsSpec, { type: 'ClusterIP' });
    t.like(metricsSpec.ports[0], { name: 'metrics', port: 9464, targetPort: 'metrics' });
  });

  test(`${label}: every pod runs restricted: non-root, read-only root, no privilege escalation`, async (t) => {
    const objects = await render([...args]);
    const pods = withPods(objects);
    t.true(pods.length >= COMPONENTS.length + 2, 'Deployments, the migration Job, the test Pod');
    for (const o of pods) {
      const spec = podSpec(o);
      const where = `${o.kind}/${o.metadata.name}`;
      t.is(spec.securityContext?.runAsNonRoot, true, where);
      t.deepEqual(spec.securityContext?.seccompProfile, { type: 'RuntimeDefault' }, where);
      t.is(spec.automountServiceAccountToken, false, where);
      for (const c of spec.containers) {
        t.like(
          c.securityContext,
          {
            runAsNonRoot: true,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          where,
        );
        t.not(c.securityContext?.runAsUser, 0, where);
        if (o.kind !== 'Pod') {
          // tsx keeps its cache in the temporary directory; the root file system is read-only.
          const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
          t.truthy(tmp, `${where} mounts a writable /tmp`);
          t.truthy(spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir);
        }
      }
    }
  });

  test(`${label}: secrets are referenced from the Secret, never written into the manifests`, async (t) => {
    const objects = await render([...args]);
    t.deepEqual(
      objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name),
      [],
      'no Secret is rendered unless secrets.create is set',
    );
    const secretName = args.length > 0 ? 'spool-secrets' : 'spool';
    for (const o of withPods(objects)) {
      for (const c of podSpec(o).containers) {
        for (const variable of c.env ?? []) {
          if (variable.name === 'NATS_CREDS') continue; // a file path; the file is a Secret volume
          if (!SECRET_NAME.test(variable.name)) continue;
          t.is(variable.value, undefined, `${o.metadata.name}: ${variable.name} is inline`);
          t.is(variable.valueFrom?.secretKeyRef?.name, secretName, variable.name);
        }
      }
    }
    const jobs = only(podSpec(find(objects, 'Deployment', 'spool-jobs')).containers, 'container');
    t.deepEqual(env(jobs).get('DATABASE_URL')?.valueFrom?.secretKeyRef, {
      name: secretName,
      key: 'database-url',
    });
    const gateway = only(
      podSpec(find(objects, 'Deployment', 'spool-gateway')).containers,
      'container',
    );
    t.deepEqual(env(gateway).get('SPOOL_ADMIN_TOKEN')?.valueFrom?.secretKeyRef, {
      name: secretName,
      key: 'admin-token',
    });
    t.false(env(gateway).has('DATABASE_URL'), 'the gateway never touches the database');
  });

  test(`${label}: each component gets every variable its spool serve requires`, async (t) => {
    const objects = await render([...args]);
    const specs: Record<string, Record<string, Variable<unknown>> | undefined> = {
      gateway: configs.gatewayConfig,
      accounts: configs.accountsConfig,
      jobs: configs.jobsConfig,
      stations: configs.stationsConfig,
      // The webhooks service's configuration, once cli/config.ts declares it.
      webhooks: (configs as Record<string, unknown>).webhooksConfig as
        | Record<string, Variable<unknown>>
        | undefined,
    };
    for (const component of COMPONENTS) {
      const spec = specs[component];
      if (!spec) continue;
      const container = only(
        podSpec(find(objects, 'Deployment', `spool-${component}`)).containers,
        'container',
      );
      const names = env(container);
      for (const name of required(spec)) t.true(names.has(name), `${component} lacks ${name}`);
    }
    const migrate = only(podSpec(find(objects, 'Job', 'spool-migrate')).containers, 'container');
    for (const name of required(configs.migrateConfig)) t.true(env(migrate).has(name), name);
  });

  test(`${label}: pods have longer to stop than the services take to drain`, async (t) => {
    const objects = await render([...args]);
    for (const component of COMPONENTS) {
      const spec = podSpec(find(objects, 'Deployment', `spool-${component}`));
      const vars = env(only(spec.containers, 'container'));
      const graceMs = Number(vars.get('SHUTDOWN_GRACE_MS')?.value);
      const delayMs = Number(vars.get('SHUTDOWN_DELAY_MS')?.value ?? 0);
      t.true(graceMs > 0, component);
      t.true(
        (spec.terminationGracePeriodSeconds ?? 30) * 1000 > graceMs + delayMs,
        `${component}: ${spec.terminationGracePeriodSeconds} s for ${graceMs + delayMs} ms`,
      );
    }
  });
}

test('the migration Job runs spool migrate before install and upgrade, with the database URL from the Secret', async (t) => {
  const objects = await render();
  const job = find(objects, 'Job', 'spool-migrate');
  t.like(job.metadata.annotations, {
    'helm.sh/hook': 'pre-install,pre-upgrade',
    'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
  });
  const container = only(podSpec(job).containers, 'container');
  t.deepEqual(container.args, ['migrate']);
  t.is(
    container.image,
    only(podSpec(find(objects, 'Deployment', 'spool-jobs')).containers, 'c').image,
  );
  t.deepEqual(env(container).get('DATABASE_URL')?.valueFrom?.secretKeyRef, {
    name: 'spool',
    key: 'database-url',
  });
  t.is((podSpec(job) as unknown as { restartPolicy: string }).restartPolicy, 'Never');
});

test('with secrets.create the chart makes the Secret as a hook before the migration, and still references it', async (t) => {
  const objects = await render([
    '--set',
    'secrets.create=true',
    '--set',
    'secrets.values.databaseUrl=postgresql://spool@cockroachdb-public:26257/spool',
  ]);
  const secret = find(objects, 'Secret', 'spool');
  t.like(secret.metadata.annotations, {
    'helm.sh/hook': 'pre-install,pre-upgrade',
    'helm.sh/hook-weight': '-10',
  });
  t.true(Number(secret.metadata.annotations?.['helm.sh/hook-weight']) < 0, 'before the Job (0)');
  t.is(
    Buffer.from(secret.data?.['database-url'] ?? '', 'base64').toString(),
    'postgresql://spool@cockroachdb-public:26257/spool',
  );
  t.regex(
    Buffer.from(secret.data?.['admin-token'] ?? '', 'base64').toString(),
    /^[A-Za-z0-9]{48}$/,
    'an operator token is generated',
  );
  t.is(
    Buffer.from(
      Buffer.from(secret.data?.['webhook-secret-key'] ?? '', 'base64').toString(),
      'base64',
    ).length,
    32,
    'and the 32-byte key webhook signing secrets are encrypted under',
  );
  const gateway = only(
    podSpec(find(objects, 'Deployment', 'spool-gateway')).containers,
    'container',
  );
  t.is(env(gateway).get('SPOOL_ADMIN_TOKEN')?.value, undefined);
  t.is(env(gateway).get('SPOOL_ADMIN_TOKEN')?.valueFrom?.secretKeyRef?.name, 'spool');
});

test('services are headless and every component calls them by dns:/// so calls spread over replicas', async (t) => {
  const objects = await render();
  const gateway = env(
    only(podSpec(find(objects, 'Deployment', 'spool-gateway')).containers, 'container'),
  );
  for (const service of SERVICES) {
    const svc = find(objects, 'Service', `spool-${service}`);
    const spec = svc.spec as {
      clusterIP?: string;
      ports: Array<{ port: number; appProtocol: string }>;
    };
    t.is(spec.clusterIP, 'None', service);
    t.is(
      gateway.get(`${service.toUpperCase()}_ADDR`)?.value,
      `dns:///spool-${service}.print.svc.cluster.local:${spec.ports[0]?.port}`,
    );
    t.is(spec.ports[0]?.appProtocol, 'kubernetes.io/h2c');
  }
});

test('the station link has its own HTTP/2 Service for agents: a LoadBalancer, or a NodePort', async (t) => {
  const link = find(await render(), 'Service', 'spool-stations-link');
  t.like(link.spec, {
    type: 'LoadBalancer',
    ports: [{ name: 'link', port: 7070, targetPort: 'link', appProtocol: 'kubernetes.io/h2c' }],
    selector: { 'app.kubernetes.io/component': 'stations' },
  });
  const nodePort = find(
    await render([
      '--set',
      'stations.link.service.type=NodePort',
      '--set',
      'stations.link.service.nodePort=30070',
    ]),
    'Service',
    'spool-stations-link',
  );
  t.like(nodePort.spec, { type: 'NodePort', ports: [{ nodePort: 30070 }] });
  const stations = only(
    podSpec(find(await render(), 'Deployment', 'spool-stations')).containers,
    'container',
  );
  t.is(
    stations.ports?.find((p) => p.name === 'link')?.containerPort,
    Number(env(stations).get('STATION_PORT')?.value),
  );
});

for (const [label, args] of [
  ['serviceMonitor.enabled', ['--set', 'serviceMonitor.enabled=true']],
  ['the production-like values', ['-f', PRODUCTION]],
] as const) {
  test(`with ${label}, a ServiceMonitor per component scrapes its /metrics on its metrics port, the gateway's off its public Service`, async (t) => {
    const objects = await render([...args]);
    t.is(objects.filter((o) => o.kind === 'ServiceMonitor').length, COMPONENTS.length);
    for (const component of COMPONENTS) {
      const name = `spool-${component}`;
      const monitor = find(objects, 'ServiceMonitor', name);
      const spec = monitor.spec as unknown as ServiceMonitorSpec;
      t.deepEqual(spec.selector.matchLabels, {
        'app.kubernetes.io/name': 'spool',
        'app.kubernetes.io/instance': 'spool',
        'app.kubernetes.io/component': component,
      });
      t.deepEqual(spec.namespaceSelector?.matchNames, ['print']);
      // Exactly one target: the component's metrics Service (the gateway's public Service and the
      // station link's have no such port).
      const scraped = component === 'gateway' ? 'spool-gateway-metrics' : name;
      const targets = scrapeTargets(objects, monitor);
      t.deepEqual(
        targets.map((target) => [target.service, target.port.name, target.path]),
        [[scraped, 'metrics', '/metrics']],
        name,
      );
      // The Service port leads to the container port the process serves /metrics on.
      const svc = find(objects, 'Service', scraped).spec as unknown as ServiceSpec;
      const deployment = find(objects, 'Deployment', name);
      const template = (
        deployment.spec as { template: { metadata: { labels: Record<string, string> } } }
      ).template;
      t.true(
        matches(svc.selector, template.metadata.labels),
        `${name}: the Service selects its pods`,
      );
      const container = only(podSpec(deployment).containers, 'container');
      const served = Number(env(container).get('METRICS_PORT')?.value);
      t.is(
        container.ports?.find((p) => p.name === targets[0]?.port.targetPort)?.containerPort,
        served,
        `${name}: metrics is the port /metrics is served on`,
      );
    }
  });
}

test('without serviceMonitor.enabled there is no ServiceMonitor (the CRD may be missing)', async (t) => {
  const objects = await render();
  t.deepEqual(
    objects.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name),
    [],
  );
});

test("metrics.port 0 turns every component's metrics off, and a port another one uses is refused, as are the stations' two ports alike", async (t) => {
  const objects = await render([
    '--set',
    'metrics.port=0',
    '--set',
    'serviceMonitor.enabled=true',
    '--set',
    'networkPolicy.enabled=true',
  ]);
  for (const service of COMPONENTS) {
    const container = only(
      podSpec(find(objects, 'Deployment', `spool-${service}`)).containers,
      'container',
    );
    t.false(env(container).has('METRICS_PORT'), service);
    const policy = find(objects, 'NetworkPolicy', `spool-${service}`).spec as {
      ingress: NetworkPolicyRule[];
    };
    t.false(policy.ingress.some((rule) => rule.ports.some((p) => p.port === 'metrics')));
  }
  t.false(objects.some((o) => o.kind === 'Service' && o.metadata.name === 'spool-gateway-metrics'));
  for (const service of SERVICES) {
    const container = only(
      podSpec(find(objects, 'Deployment', `spool-${service}`)).containers,
      'container',
    );
    t.false(
      container.ports?.some((p) => p.name === 'metrics'),
      service,
    );
    const spec = find(objects, 'Service', `spool-${service}`).spec as unknown as ServiceSpec;
    t.deepEqual(
      spec.ports.map((p) => p.name),
      ['grpc'],
    );
  }
  t.deepEqual(
    objects.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name),
    [],
    'nothing to scrape',
  );

  const link = await helm(['template', 'spool', CHART_DIR, '--set', 'metrics.port=7070']);
  t.not(link.code, 0);
  t.regex(link.stderr, /metrics\.port 7070 is also stations\.link\.port/);
  const grpc = await helm(['template', 'spool', CHART_DIR, '--set', 'metrics.port=50051']);
  t.not(grpc.code, 0);
  t.regex(grpc.stderr, /metrics\.port 50051 is also accounts\.grpcPort/);
  const http = await helm(['template', 'spool', CHART_DIR, '--set', 'metrics.port=8080']);
  t.not(http.code, 0);
  t.regex(http.stderr, /metrics\.port 8080 is also gateway\.port/);
  // The stations service's two listeners are refused on one port too, metrics on or off.
  for (const metrics of ['9464', '0']) {
    const clash = await helm([
      'template',
      'spool',
      CHART_DIR,
      '--set',
      'stations.grpcPort=7070',
      '--set',
      `metrics.port=${metrics}`,
    ]);
    t.not(clash.code, 0);
    t.regex(clash.stderr, /stations\.grpcPort 7070 is also stations\.link\.port/);
  }
});

test('NetworkPolicies let scrapers reach the metrics ports: from anywhere, or from networkPolicy.metricsFrom', async (t) => {
  const metricsRule = (objects: K8sObject[], name: string) =>
    (find(objects, 'NetworkPolicy', name).spec as { ingress: NetworkPolicyRule[] }).ingress.filter(
      (rule) => rule.ports.some((p) => p.port === 'metrics'),
    );
  const open = await render(['--set', 'networkPolicy.enabled=true']);
  for (const service of COMPONENTS) {
    const rules = metricsRule(open, `spool-${service}`);
    t.is(rules.length, 1, service);
    t.is(rules[0]?.from, undefined, `${service}: no metricsFrom, so from anywhere`);
  }

  const production = await render(['-f', PRODUCTION]);
  const monitoring = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
  };
  for (const service of COMPONENTS) {
    const rules = metricsRule(production, `spool-${service}`);
    t.deepEqual(
      rules.map((rule) => rule.from),
      [[monitoring]],
      service,
    );
  }
  // The gateway's http port, with no /metrics on it, is for the ingress controller, and for the
  // release's own pods: its helm test pod checks the gateway from inside the namespace.
  const gateway = find(production, 'NetworkPolicy', 'spool-gateway').spec as {
    ingress: NetworkPolicyRule[];
  };
  const fromHttp = gateway.ingress
    .filter((rule) => rule.ports.some((p) => p.port === 'http'))
    .flatMap((rule) => rule.from ?? []);
  t.deepEqual(fromHttp, [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
    {
      podSelector: {
        matchLabels: { 'app.kubernetes.io/name': 'spool', 'app.kubernetes.io/instance': 'spool' },
      },
    },
  ]);
  const testPod = find(production, 'Pod', 'spool-test');
  t.like(testPod.metadata.labels, {
    'app.kubernetes.io/name': 'spool',
    'app.kubernetes.io/instance': 'spool',
  });
});

test('the Ingress routes only /v1, /admin/v1, /console and /agent/v1 to the gateway', async (t) => {
  for (const args of [
    ['--set', 'ingress.enabled=true'],
    ['-f', PRODUCTION],
  ]) {
    const ingress = find(await render(args), 'Ingress', 'spool-gateway');
    const rules = (ingress.spec as { rules: Array<{ http: { paths: Array<{ path: string }> } }> })
      .rules;
    for (const rule of rules) {
      t.deepEqual(
        rule.http.paths.map((p) => p.path),
        ['/v1', '/admin/v1', '/console', '/agent/v1'],
        args.join(' '),
      );
    }
  }
});

test('release uploads get an Ingress of their own for /admin/v1/releases, with a larger body limit', async (t) => {
  type Rules = Array<{
    host: string;
    http: { paths: Array<{ path: string; backend: { service: { name: string } } }> };
  }>;
  const plain = await render(['--set', 'ingress.enabled=true']);
  t.deepEqual(
    plain.filter((o) => o.kind === 'Ingress').map((o) => o.metadata.name),
    ['spool-gateway'],
    'none unless asked for',
  );

  const objects = await render(['-f', PRODUCTION]);
  const main = find(objects, 'Ingress', 'spool-gateway');
  const uploads = find(objects, 'Ingress', 'spool-gateway-release-uploads');
  t.like(main.metadata.annotations, { 'nginx.ingress.kubernetes.io/proxy-body-size': '32m' });
  t.like(uploads.metadata.annotations, {
    'cert-manager.io/cluster-issuer': 'letsencrypt',
    'nginx.ingress.kubernetes.io/proxy-body-size': '260m',
    'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
  });
  const spec = uploads.spec as { ingressClassName: string; tls: unknown; rules: Rules };
  t.is(spec.ingressClassName, 'nginx');
  t.deepEqual(spec.tls, (main.spec as { tls: unknown }).tls);
  t.deepEqual(
    spec.rules.map((r) => [r.host, r.http.paths.map((p) => [p.path, p.backend.service.name])]),
    [['api.print.example.net', [['/admin/v1/releases', 'spool-gateway']]]],
  );
});

test("gateway.publicUrl becomes the gateway's PUBLIC_URL, for invitation links and the console", async (t) => {
  const gatewayEnv = async (args: string[]) =>
    env(
      only(
        podSpec(find(await render(args), 'Deployment', 'spool-gateway')).containers,
        'container',
      ),
    );
  t.false((await gatewayEnv([])).has('PUBLIC_URL'));
  t.is(
    (await gatewayEnv(['--set', 'gateway.publicUrl=https://print.example.com'])).get('PUBLIC_URL')
      ?.value,
    'https://print.example.com',
  );
  const refused = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--set',
    'gateway.publicUrl=print.example.com',
  ]);
  t.not(refused.code, 0);
  t.regex(refused.stderr, /publicUrl/);
});

test('the production-like values add an Ingress, autoscalers, NetworkPolicies, a ServiceMonitor and NATS credentials', async (t) => {
  const objects = await render(['-f', PRODUCTION]);
  const ingress = find(objects, 'Ingress', 'spool-gateway');
  t.like(ingress.spec, {
    ingressClassName: 'nginx',
    rules: [
      {
        host: 'api.print.example.net',
        http: {
          paths: [{ backend: { service: { name: 'spool-gateway', port: { name: 'http' } } } }],
        },
      },
    ],
  });
  for (const name of ['spool-gateway', 'spool-jobs', 'spool-stations']) {
    const hpa = find(objects, 'HorizontalPodAutoscaler', name);
    t.like(hpa.spec, { scaleTargetRef: { kind: 'Deployment', name } });
    t.false('replicas' in (find(objects, 'Deployment', name).spec ?? {}), `${name}: HPA owns it`);
  }
  t.is(objects.filter((o) => o.kind === 'NetworkPolicy').length, COMPONENTS.length);
  for (const component of COMPONENTS) {
    t.like(find(objects, 'ServiceMonitor', `spool-${component}`).metadata.labels, {
      release: 'kube-prometheus-stack',
    });
  }
  const stations = podSpec(find(objects, 'Deployment', 'spool-stations'));
  const container = only(stations.containers, 'container');
  t.is(env(container).get('NATS_CREDS')?.value, '/etc/spool/nats/nats.creds');
  const creds = stations.volumes?.find((v) => v.name === 'nats-creds');
  t.is(creds?.secret?.secretName, 'spool-secrets');
  t.deepEqual(
    container.volumeMounts?.find((m) => m.name === 'nats-creds'),
    { name: 'nats-creds', mountPath: '/etc/spool/nats', readOnly: true },
  );
  t.like(find(objects, 'PodDisruptionBudget', 'spool-accounts').spec, { minAvailable: 2 });
  // The document limit reaches the gateway, which refuses larger bodies, as well as the jobs
  // service; a plain number in the values is written whole (not 3.3554432e+07).
  for (const name of ['spool-gateway', 'spool-jobs']) {
    const vars = env(only(podSpec(find(objects, 'Deployment', name)).containers, 'container'));
    t.is(vars.get('MAX_DOCUMENT_BYTES')?.value, '33554432', name);
  }
});

test('a region of a multi-region installation: every component knows its region, the regions and the stream replicas', async (t) => {
  const objects = await render(['-f', MULTI_REGION]);
  for (const component of COMPONENTS) {
    const vars = env(
      only(podSpec(find(objects, 'Deployment', `spool-${component}`)).containers, 'container'),
    );
    t.is(vars.get('REGION')?.value, 'eu-west', component);
    t.is(vars.get('REGIONS')?.value, 'eu-west,us-east', component);
    t.is(vars.get('NATS_REPLICAS')?.value, '3', component);
  }
  // One region by default: no REGIONS at all.
  const single = env(
    only(podSpec(find(await render(), 'Deployment', 'spool-jobs')).containers, 'container'),
  );
  t.is(single.get('REGION')?.value, 'default');
  t.false(single.has('REGIONS'));

  const stray = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--set',
    'region=ap-south',
    '--set',
    'regions={eu-west,us-east}',
  ]);
  t.not(stray.code, 0);
  t.regex(stray.stderr, /region "ap-south" is not one of regions \(eu-west, us-east\)/);
});

test('a wrong value fails at install with the schema or a template naming it', async (t) => {
  const file = await valuesFile(t, 'gateway:\n  replicas: "two"\n');
  const res = await helm(['template', 'spool', CHART_DIR, '-f', file]);
  t.not(res.code, 0);
  t.regex(res.stderr, /values don't meet the specifications of the schema/);
  t.regex(res.stderr, /at '\/gateway\/replicas': got string, want integer/);

  const typo = await helm(['template', 'spool', CHART_DIR, '--set', 'jobs.replica=3']);
  t.regex(typo.stderr, /at '\/jobs': additional properties 'replica' not allowed/);

  const noUrl = await helm(['template', 'spool', CHART_DIR, '--set', 'secrets.create=true']);
  t.regex(noUrl.stderr, /at '\/secrets\/values\/databaseUrl'/);

  // A resource quantity Kubernetes would refuse is refused here, naming it.
  const memory = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--set',
    'gateway.resources.limits.memory=1GB',
  ]);
  t.regex(memory.stderr, /at '\/gateway\/resources\/limits\/memory': '1GB' does not match pattern/);
  const scaling = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--set',
    'jobs.autoscaling.enabled=true',
    '--set',
    'jobs.autoscaling.minReplicas=5',
    '--set',
    'jobs.autoscaling.maxReplicas=2',
  ]);
  t.regex(scaling.stderr, /jobs\.autoscaling\.minReplicas 5 is more than its maxReplicas 2/);
  // A disruption budget no eviction can meet would hang every node drain.
  for (const [set, said] of [
    [
      'jobs.pdb.minAvailable=2',
      /jobs\.pdb\.minAvailable 2 leaves no pod to evict of the 2 running/,
    ],
    ['webhooks.pdb.minAvailable=100%', /webhooks\.pdb\.minAvailable 100% leaves no pod to evict/],
    [
      'jobs.pdb.minAvailable=51%',
      /jobs\.pdb\.minAvailable 51% leaves no pod to evict of the 2 running \(replicas\): Kubernetes rounds 51% of 2 pods up to 2/,
    ],
    ['gateway.pdb.maxUnavailable=0', /gateway\.pdb\.maxUnavailable 0 lets no pod be evicted/],
  ] as const) {
    const stuck = await helm(['template', 'spool', CHART_DIR, '--set', set]);
    t.is(stuck.code, 1, set);
    t.regex(stuck.stderr, said);
  }
  const scaled = await helm([
    'template',
    'spool',
    CHART_DIR,
    ...['--set', 'jobs.autoscaling.enabled=true', '--set', 'jobs.autoscaling.minReplicas=4'],
    ...['--set', 'jobs.pdb.minAvailable=3'],
  ]);
  t.is(scaled.code, 0, scaled.stderr);
  // Half of two pods keeps one and lets the other go.
  const half = await render(['--set', 'jobs.pdb.minAvailable=50%']);
  t.like(find(half, 'PodDisruptionBudget', 'spool-jobs').spec, { minAvailable: '50%' });
  for (const quantity of ['512Mi', '500m', '1.5', '2G']) {
    const ok = await helm([
      'template',
      'spool',
      CHART_DIR,
      '--set',
      `gateway.resources.requests.cpu=${quantity}`,
    ]);
    t.is(ok.code, 0, `${quantity}: ${ok.stderr}`);
  }
});

test('a termination grace period shorter than the drain is refused with the time needed', async (t) => {
  const res = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--set',
    'gateway.terminationGracePeriodSeconds=10',
  ]);
  t.not(res.code, 0);
  t.regex(
    res.stderr,
    /gateway\.terminationGracePeriodSeconds is 10, but draining takes up to 15 s .*give at least 25/,
  );
});

test('names stay within 63 characters and labels follow app.kubernetes.io for a long release name', async (t) => {
  // Helm's longest release name (53); with the chart name it is beyond 63.
  const release = 'print-platform-production-europe-west-and-more-region';
  const objects = await render([], release);
  const names = objects.map((o) => `${o.kind}/${o.metadata.name}`);
  t.is(new Set(names).size, names.length, 'names are distinct');
  for (const o of objects) {
    t.true(o.metadata.name.length <= 63, o.metadata.name);
    t.regex(o.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    t.like(o.metadata.labels, {
      'app.kubernetes.io/name': 'spool',
      'app.kubernetes.io/instance': release,
      'app.kubernetes.io/managed-by': 'Helm',
    });
  }
});

test('helm test has a pod that checks the gateway and its way to the accounts service', async (t) => {
  const objects = await render();
  const pod = find(objects, 'Pod', 'spool-test');
  t.is(pod.metadata.annotations?.['helm.sh/hook'], 'test');
  const container = only(podSpec(pod).containers, 'container');
  t.is(env(container).get('SPOOL_URL')?.value, 'http://spool-gateway.print.svc.cluster.local:80');
  t.deepEqual(env(container).get('SPOOL_ADMIN_TOKEN')?.valueFrom?.secretKeyRef, {
    name: 'spool',
    key: 'admin-token',
  });
});

test('NOTES.txt tells the operator how to create the first organization and connect agents', async (t) => {
  const res = await helm([
    'install',
    'spool',
    CHART_DIR,
    '--namespace',
    'print',
    '--dry-run=client',
  ]);
  t.is(res.code, 0, res.stderr);
  const notes = res.stdout.slice(res.stdout.indexOf('NOTES:'));
  t.regex(notes, /kubectl -n print exec deploy\/spool-gateway -- spool admin org create --name/);
  t.regex(notes, /spool agent --server <link address>:7070/);
  t.regex(notes, /image\.repository is still the placeholder/);
});

test('docs/deploy.md names the objects and Secret keys the chart makes', async (t) => {
  const doc = await readFile(join(CHART_DIR, '..', '..', 'docs', 'deploy.md'), 'utf8');
  const objects = await render(['-f', PRODUCTION]);
  const named = [...doc.matchAll(/\b(deploy|job)\/([a-z0-9-]+)/g)];
  t.true(named.length >= 3);
  for (const [, kind, name] of named) {
    find(objects, kind === 'deploy' ? 'Deployment' : 'Job', name as string);
  }
  const referenced = new Set(
    withPods(objects).flatMap((o) =>
      podSpec(o).containers.flatMap((c) =>
        (c.env ?? []).flatMap((e) =>
          e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.key] : [],
        ),
      ),
    ),
  );
  referenced.add('nats.creds');
  const table = /\| Key \| Variable \|[^\n]*\n\|[-| ]+\n((?:\|[^\n]*\n)+)/.exec(doc)?.[1] ?? '';
  const documented = new Set([...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
  t.deepEqual([...documented].sort(), [...referenced].sort());
});
