/**
 * Station enrollment codes (docs/platforms.md): a one-use code a station's agent turns into its
 * device token. `POST /v1/orgs/{org}/enrollments` (stations:write) makes one; `POST
 * /v1/public/enroll` (no key, its own limit per client address, routes/public.ts) exchanges it for
 * the station, made then, and its token. The stations service keeps the codes, as hashes only.
 */
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { Enrollment } from '../../gen/spool/v1/stations.js';
import {
  EXAMPLE_ENROLLMENT_CODE,
  MAX_ENROLLMENT_EXPIRES_IN_S,
  MAX_STATION_NAME_LENGTH,
  MIN_ENROLLMENT_EXPIRES_IN_S,
} from '../../lib/contracts/enrollments.js';
import { rfc3339OrNull } from '../../lib/time.js';
import { body } from '../body.js';
import type { Backends } from '../clients.js';
import { rejectUnknownParams } from '../query.js';
import { StationSchema } from '../schemas.js';
import type { GatewayState } from '../state.js';
import { stationView } from '../views.js';
import { param } from './context.js';

type Handler = Middleware<GatewayState>;

/** The largest body `POST /v1/public/enroll` reads: a code is a dozen characters. */
export const ENROLL_BODY_LIMIT = 1024;

const Id = Type.String({ format: 'uuid' });
const Time = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });

export const CreateEnrollmentBody = Type.Object(
  {
    station_name: Type.String({
      minLength: 1,
      maxLength: MAX_STATION_NAME_LENGTH,
      description: 'the name of the station the code makes',
    }),
    location_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          'the id of a location of the organization, where the station will be; leave it out for none. A location deleted before the code is used leaves the station in none',
      }),
    ),
    expires_in: Type.Optional(
      Type.Integer({
        minimum: MIN_ENROLLMENT_EXPIRES_IN_S,
        maximum: MAX_ENROLLMENT_EXPIRES_IN_S,
        description: `seconds the code can be used, ${MIN_ENROLLMENT_EXPIRES_IN_S} to ${MAX_ENROLLMENT_EXPIRES_IN_S} (30 days); 86400 (24 hours) by default`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** The answer shape of `enrollmentView`, for the OpenAPI document. */
export const EnrollmentSchema = Type.Object(
  {
    id: Id,
    code: Type.Optional(
      Type.String({
        pattern: '^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{2}$',
        description:
          'the one-use code, `XXXX-XXXX-XX` without 0, O, 1 or I; shown in this answer only (Spool keeps its hash), so a replay for an Idempotency-Key has none',
        examples: [EXAMPLE_ENROLLMENT_CODE],
      }),
    ),
    station_name: Type.String(),
    location_id: Type.Union([Id, Type.Null()]),
    expires_at: Time,
    created_at: Time,
  },
  { additionalProperties: false },
);

/** `{enrollment}` */
export const EnrollmentAnswer = Type.Object(
  { enrollment: EnrollmentSchema },
  { additionalProperties: false },
);

export const EnrollBody = Type.Object(
  {
    code: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'the enrollment code; case, spaces and dashes do not matter',
    }),
  },
  { additionalProperties: false },
);

/** `{station, token}`: the station made from the code and its device token, shown once. */
export const EnrollAnswer = Type.Object(
  {
    station: StationSchema,
    token: Type.String({
      pattern: '^svc_dev_',
      description: "the station's device token, shown in this answer only",
    }),
  },
  { additionalProperties: false },
);

export function enrollmentView(enrollment: Enrollment | undefined) {
  if (!enrollment) throw new Error('missing enrollment in response');
  return {
    id: enrollment.id,
    code: enrollment.code,
    station_name: enrollment.stationName,
    location_id: enrollment.locationId || null,
    expires_at: rfc3339OrNull(enrollment.expiresAt),
    created_at: rfc3339OrNull(enrollment.createdAt),
  };
}

export function enrollmentV1Handlers(deps: {
  backends: Backends;
  bodyLimit: number;
}): Record<string, Handler> {
  const { stations } = deps.backends;
  return {
    'POST /v1/orgs/:org/enrollments': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, CreateEnrollmentBody, deps.bodyLimit);
      const { enrollment } = await stations.createEnrollment({
        orgId: param(ctx, 'org'),
        stationName: req.station_name,
        locationId: req.location_id ?? '',
        expiresIn: req.expires_in,
      });
      ctx.status = 201;
      ctx.body = { enrollment: enrollmentView(enrollment) };
    },
  };
}

/** `POST /v1/public/enroll`, mounted by routes/public.ts behind its limits. */
export function enrollHandler(backends: Backends): Handler {
  return async (ctx) => {
    const req = await body(ctx, EnrollBody, ENROLL_BODY_LIMIT);
    const { station, token } = await backends.stations.redeemEnrollment({ code: req.code });
    ctx.status = 201;
    ctx.body = { station: stationView(station), token };
  };
}
