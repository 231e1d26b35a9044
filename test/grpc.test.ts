import anyTest, { type TestFn } from 'ava';
import {
  AccountsServiceClient,
  type AccountsServiceServer,
  AccountsServiceService,
} from '../gen/spool/v1/accounts.js';
import { ERROR_CATALOGUE, type ErrorCode, SpoolError } from '../lib/errors.js';
import {
  type AsyncClient,
  type AsyncServer,
  adaptServer,
  createClient,
  type GrpcServerHandle,
  startGrpcServer,
} from '../lib/grpc.js';
import { silentLogger } from '../lib/logger.js';

const test = anyTest as TestFn<{
  server: GrpcServerHandle;
  client: AsyncClient<AccountsServiceClient>;
}>;

let next: () => Promise<never> = async () => {
  throw new Error('unset');
};

const notCalled = async (): Promise<never> => {
  throw new SpoolError('internal', 'not used here');
};

/** A service this one calls on a request's behalf, down for good (nothing listens on port 1). */
const downstream = createClient(AccountsServiceClient, {
  service: 'stations',
  address: '127.0.0.1:1',
});

/** A service this one calls on a request's behalf that is up but slow (this server, as `stations`). */
let slowDownstream: AsyncClient<AccountsServiceClient> | undefined;

const impl: AsyncServer<AccountsServiceServer> = {
  createOrg: () => next(),
  getOrg: async (req, call) => {
    if (req.orgId === 'slow') await new Promise((r) => setTimeout(r, 500));
    if (req.orgId === 'slower') await new Promise((r) => setTimeout(r, 5_000));
    if (req.orgId === 'downstream') return downstream.getOrg({ orgId: 'x' }, { parent: call });
    if (req.orgId === 'slow-downstream') {
      return (slowDownstream as AsyncClient<AccountsServiceClient>).getOrg(
        { orgId: 'slower' },
        { parent: call },
      );
    }
    return {
      org: {
        id: req.orgId,
        name: 'n',
        createdAt: new Date(0),
        deletingSince: undefined,
        parentId: '',
        reference: '',
      },
    };
  },
  createApiKey: notCalled,
  closeOrg: notCalled,
  deleteOrg: notCalled,
  listApiKeys: notCalled,
  revokeApiKey: notCalled,
  recordKeyUses: notCalled,
  authenticateApiKey: notCalled,
  getSettings: notCalled,
  updateSettings: notCalled,
  renameOrg: notCalled,
  createInvitation: notCalled,
  getInvitation: notCalled,
  getOrgInvitation: notCalled,
  listInvitations: notCalled,
  revokeInvitation: notCalled,
  acceptInvitation: notCalled,
  signIn: notCalled,
  authenticateSession: notCalled,
  signOut: notCalled,
  listMembers: notCalled,
  changeRole: notCalled,
  removeMember: notCalled,
  listOrgs: notCalled,
  recordAudit: notCalled,
  listAudit: notCalled,
  createChildOrg: notCalled,
  listChildOrgs: notCalled,
  getChildOrg: notCalled,
};

test.before(async (t) => {
  const server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [
      {
        name: 'spool.v1.AccountsService',
        definition: AccountsServiceService,
        implementation: adaptServer(impl, silentLogger),
      },
    ],
  });
  const client = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: `127.0.0.1:${server.port}`,
  });
  slowDownstream = createClient(AccountsServiceClient, {
    service: 'stations',
    address: `127.0.0.1:${server.port}`,
  });
  t.context = { server, client };
});

test.after.always(async (t) => {
  downstream.close();
  slowDownstream?.close();
  t.context.client?.close();
  await t.context.server?.shutdown(100);
});

test.serial('every catalogue error crosses gRPC with its code, message and param', async (t) => {
  for (const code of Object.keys(ERROR_CATALOGUE) as ErrorCode[]) {
    next = async () => {
      throw new SpoolError(code, `message for ${code}`, { param: 'field', retryAfter: 7 });
    };
    const err = await t.throwsAsync(t.context.client.createOrg({ name: 'x' }));
    t.true(err instanceof SpoolError);
    const spool = err as SpoolError;
    t.is(spool.code, code);
    t.is(spool.message, `message for ${code}`);
    t.is(spool.param, 'field');
    t.is(spool.retryAfter, 7);
    t.is(spool.httpStatus, ERROR_CATALOGUE[code].http);
  }
});

test.serial('an unexpected error crosses as internal without its detail', async (t) => {
  next = async () => {
    throw new Error('secret detail about the database');
  };
  const err = (await t.throwsAsync(t.context.client.createOrg({ name: 'x' }))) as SpoolError;
  t.is(err.code, 'internal');
  t.false(err.message.includes('secret'));
});

test.serial(
  'a serialization conflict outside a transaction answers unavailable, to be retried',
  async (t) => {
    next = async () => {
      throw Object.assign(new Error('could not serialize access'), { code: '40001' });
    };
    const err = (await t.throwsAsync(t.context.client.createOrg({ name: 'x' }))) as SpoolError;
    t.is(err.code, 'unavailable');
    t.is(err.retryAfter, 1);
  },
);

test('a call its service took too long to answer is a timeout (504): the service may have done it', async (t) => {
  const err = (await t.throwsAsync(
    t.context.client.getOrg({ orgId: 'slow' }, { deadlineMs: 50 }),
  )) as SpoolError;
  t.is(err.code, 'timeout');
  t.is(err.httpStatus, 504);
  t.is(err.retryAfter, 1);
  t.regex(err.message, /^the accounts service did not answer in time/);
  t.regex(err.message, /same Idempotency-Key/);
});

test('a timeout of a call made for a caller reaches the caller as a timeout, naming the slow service', async (t) => {
  // The call made for it has a fifth of its 4 s less (3.2 s): its timeout reaches the caller with
  // 0.8 s to spare, which a busy machine's scheduling does not eat.
  const err = (await t.throwsAsync(
    t.context.client.getOrg({ orgId: 'slow-downstream' }, { deadlineMs: 4_000 }),
  )) as SpoolError;
  t.is(err.code, 'timeout');
  t.regex(err.message, /^the stations service did not answer in time/);
});

test('a service that is down answers unavailable', async (t) => {
  const client = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: '127.0.0.1:1',
    deadlineMs: 500,
  });
  t.teardown(() => client.close());
  const err = (await t.throwsAsync(client.getOrg({ orgId: 'x' }))) as SpoolError;
  t.is(err.code, 'unavailable');
});

test('the standard health service reports SERVING', async (t) => {
  const { credentials, loadPackageDefinition } = await import('@grpc/grpc-js');
  const { loadSync } = await import('@grpc/proto-loader');
  const { protoPath } = await import('grpc-health-check');
  const definition = loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: new (addr: string, creds: unknown) => HealthClient } } };
  };
  interface HealthClient {
    check(req: { service: string }, cb: (err: Error | null, res: { status: string }) => void): void;
    close(): void;
  }
  const health = new definition.grpc.health.v1.Health(
    `127.0.0.1:${t.context.server.port}`,
    credentials.createInsecure(),
  );
  t.teardown(() => health.close());
  const check = (service: string) =>
    new Promise<string>((resolve, reject) =>
      health.check({ service }, (err, res) => (err ? reject(err) : resolve(res.status))),
    );
  t.is(await check(''), 'SERVING');
  t.is(await check('spool.v1.AccountsService'), 'SERVING');
});

test('a call made for a caller fails before the caller’s deadline, naming the service that is down', async (t) => {
  const err = (await t.throwsAsync(
    t.context.client.getOrg({ orgId: 'downstream' }, { deadlineMs: 1_000 }),
  )) as SpoolError;
  t.is(err.code, 'unavailable');
  t.is(err.message, 'the stations service is unavailable; try again');
});
