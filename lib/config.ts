/**
 * Configuration from the environment. Each deployable declares the variables it reads with the
 * helpers below and calls {@link readConfig} once in its entry point, passing the environment in.
 * Every bad or missing variable is reported at once, by name, before anything starts.
 */

export type Env = Record<string, string | undefined>;

export interface Variable<T> {
  name: string;
  description: string;
  /** Parses the raw value; throws an Error whose message says what is expected. */
  parse(raw: string): T;
  /** Used when the variable is unset or empty; absent means the variable is required. */
  fallback?: () => T;
  /** A secret (a key, a token): an error about it never repeats its value, which logs would keep. */
  secret?: boolean;
}

export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Values<S> = { [K in keyof S]: S[K] extends Variable<infer T> ? T : never };

export function readConfig<S extends Record<string, Variable<unknown>>>(
  env: Env,
  spec: S,
): Values<S> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, variable] of Object.entries(spec)) {
    const raw = env[variable.name];
    if (raw === undefined || raw === '') {
      if (variable.fallback) out[key] = variable.fallback();
      else problems.push(`${variable.name} is required: ${variable.description}`);
      continue;
    }
    try {
      out[key] = variable.parse(raw);
    } catch (err) {
      const got = variable.secret ? '' : ` (got ${JSON.stringify(withoutPassword(raw))})`;
      problems.push(`${variable.name} ${(err as Error).message}${got}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out as Values<S>;
}

/** A URL's password, as in a DATABASE_URL, masked; any other text as it is. */
function withoutPassword(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password === '') return raw;
    u.password = '***';
    return u.toString();
  } catch {
    return raw;
  }
}

interface Options<T> {
  description: string;
  default?: T;
}

function variable<T>(name: string, options: Options<T>, parse: (raw: string) => T): Variable<T> {
  const v: Variable<T> = { name, description: options.description, parse };
  if (options.default !== undefined) {
    const value = options.default;
    v.fallback = () => value;
  }
  return v;
}

export function str(name: string, options: Options<string>): Variable<string> {
  return variable(name, options, (raw) => raw);
}

/**
 * A required secret string, such as a token clients present: at least `minLength` characters, so
 * that a placeholder (`admin`, `changeme`) is refused rather than guarded against guessing.
 */
/** An optional secret: `undefined` when unset, else as {@link secretStr} checks it. */
export function optionalSecret(
  name: string,
  options: { description: string; minLength: number },
): Variable<string | undefined> {
  return { ...secretStr(name, options), fallback: () => undefined };
}

export function secretStr(
  name: string,
  options: { description: string; minLength: number },
): Variable<string> {
  return {
    name,
    description: options.description,
    secret: true,
    parse: (raw) => {
      if (raw.length < options.minLength) {
        throw new Error(
          `must be at least ${options.minLength} characters: use a random one, such as openssl rand -base64 32 makes`,
        );
      }
      return raw;
    },
  };
}

/** An optional string: `undefined` when unset. */
export function optionalStr(name: string, description: string): Variable<string | undefined> {
  return { name, description, parse: (raw) => raw, fallback: () => undefined };
}

export function int(
  name: string,
  options: Options<number> & { min?: number; max?: number },
): Variable<number> {
  const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = options;
  return variable(name, options, (raw) => {
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || n < min || n > max) {
      throw new Error(`must be a whole number from ${min} to ${max}`);
    }
    return n;
  });
}

export function port(name: string, options: Options<number>): Variable<number> {
  return int(name, { ...options, min: 0, max: 65535 });
}

export function bool(name: string, options: Options<boolean>): Variable<boolean> {
  return variable(name, options, (raw) => {
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw new Error('must be true or false (1/0, yes/no, on/off)');
  });
}

export function oneOf<T extends string>(
  name: string,
  values: readonly T[],
  options: Options<T>,
): Variable<T> {
  return variable(name, options, (raw) => {
    if (!(values as readonly string[]).includes(raw)) {
      throw new Error(`must be one of ${values.join(', ')}`);
    }
    return raw as T;
  });
}

export function url(name: string, protocols: string[], options: Options<string>): Variable<string> {
  return variable(name, options, (raw) => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new Error(`must be a URL (${protocols.join(' or ')})`);
    }
    if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
      throw new Error(`must be a URL with scheme ${protocols.join(' or ')}`);
    }
    return raw;
  });
}

/** `host:port` with a port from 1 to 65535; IPv6 hosts in brackets. */
function isHostPort(value: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):(\d{1,5})$/.exec(value);
  return m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535;
}

function isIpv4Port(value: string): boolean {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):\d{1,5}$/.exec(value);
  if (!m || m.slice(1, 5).some((octet) => Number(octet) > 255)) return false;
  return isHostPort(value);
}

/** Whether the part after `scheme:` of a gRPC target URI is well formed. */
const TARGET_CHECKS: Record<string, (rest: string) => boolean> = {
  // dns:host:port, dns:///host:port, dns://resolver:53/host:port
  dns: (rest) => isHostPort(rest.replace(/^\/\/[^/]*\//, '')),
  ipv4: (rest) => rest.split(',').every(isIpv4Port),
  ipv6: (rest) => rest.split(',').every((a) => a.startsWith('[') && isHostPort(a)),
  unix: (rest) => /^(\/\/)?\/\S+$/.test(rest),
};

/**
 * A gRPC target as grpc-js takes it: `host:port`, or a target URI naming the resolver, so that a
 * client can spread its calls over every replica (`round_robin`): `dns:///host:port` (in
 * Kubernetes, a headless Service: `dns:///spool-jobs.ns.svc:50051`), `dns://resolver/host:port`,
 * `ipv4:10.0.0.1:50051,10.0.0.2:50051`, `ipv6:[::1]:50051,…` or `unix:/path`.
 */
export function address(name: string, options: Options<string>): Variable<string> {
  return variable(name, options, (raw) => {
    const target = /^(dns|ipv4|ipv6|unix):(.*)$/.exec(raw);
    const ok = target ? TARGET_CHECKS[target[1] as string]?.(target[2] as string) : isHostPort(raw);
    if (!ok) {
      throw new Error(
        'must be host:port, or a gRPC target such as dns:///host:port or ipv4:10.0.0.1:50051,10.0.0.2:50051',
      );
    }
    return raw;
  });
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function logLevel(): Variable<(typeof LOG_LEVELS)[number]> {
  return oneOf('LOG_LEVEL', LOG_LEVELS, { description: 'pino log level', default: 'info' });
}
