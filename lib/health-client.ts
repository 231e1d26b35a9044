/**
 * A client of the standard gRPC health protocol (`grpc.health.v1.Health/Check`), with the proto
 * that grpc-health-check ships, for the public status page and readiness checks.
 */
import { credentials, loadPackageDefinition, Metadata, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';

interface HealthStub {
  check(
    req: { service: string },
    metadata: Metadata,
    options: { deadline: number },
    cb: (err: ServiceError | null, res: { status: string }) => void,
  ): void;
  close(): void;
}

const definition = loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
  grpc: {
    health: {
      v1: { Health: new (address: string, creds: unknown, options: object) => HealthStub };
    };
  };
};

export interface HealthClient {
  /** SERVING, NOT_SERVING, …, or UNREACHABLE when no answer came within `deadlineMs`. */
  check(service?: string, deadlineMs?: number): Promise<string>;
  close(): void;
}

export function createHealthClient(address: string): HealthClient {
  // A service that comes back should show healthy within seconds, not after a long backoff.
  const stub = new definition.grpc.health.v1.Health(address, credentials.createInsecure(), {
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 2_000,
  });
  return {
    check(service = '', deadlineMs = 1_000) {
      return new Promise((resolve) => {
        stub.check({ service }, new Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) =>
          resolve(err ? 'UNREACHABLE' : res.status),
        );
      });
    },
    close: () => stub.close(),
  };
}
