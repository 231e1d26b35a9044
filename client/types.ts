/**
 * Names for the shapes of the API, taken from the generated `paths` by path and method (paths stay
 * stable while operation ids and schema names may change), so a change to the OpenAPI document
 * changes these types and breaks the build where it matters.
 */
import type { paths } from './generated/schema.js';

type JsonBody<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type RequestOf<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: infer R;
}
  ? JsonBody<NonNullable<R>>
  : never;
type AnswerOf<
  P extends keyof paths,
  M extends keyof paths[P],
  S extends number,
> = paths[P][M] extends { responses: infer R }
  ? S extends keyof R
    ? JsonBody<R[S]>
    : never
  : never;
type QueryOf<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  parameters: { query?: infer Q };
}
  ? NonNullable<Q>
  : never;

/** The paths of the API, as the OpenAPI document names them. */
export type { paths };

/** What `GET /v1/key` answers: the calling key, its organization and scopes. */
export type KeyInfo = AnswerOf<'/v1/key', 'get', 200>;
/** The body of `POST /v1/orgs/{org}/jobs`. */
export type CreateJobRequest = RequestOf<'/v1/orgs/{org}/jobs', 'post'>;
/** A job, as every answer and webhook carries it. */
export type Job = AnswerOf<'/v1/orgs/{org}/jobs', 'post', 201>['job'];
/** A job's status. */
export type JobStatus = Job['status'];
/** The filters and paging of `GET /v1/orgs/{org}/jobs`. */
export type ListJobsQuery = QueryOf<'/v1/orgs/{org}/jobs', 'get'>;
/** A page of jobs: `{items, next_cursor, counts}`. */
export type JobPage = AnswerOf<'/v1/orgs/{org}/jobs', 'get', 200>;
/** `GET /v1/orgs/{org}/jobs/{id}`: the job and its events. */
export type JobWithEvents = AnswerOf<'/v1/orgs/{org}/jobs/{id}', 'get', 200>;
/** One change of a job: `{at, status, detail, actor}`. */
export type JobEvent = JobWithEvents['events'][number];
/** The body of `POST …/jobs/{id}/reprint`. */
export type ReprintRequest = RequestOf<'/v1/orgs/{org}/jobs/{id}/reprint', 'post'>;
/** The body of `POST …/jobs/{id}/move`. */
export type MoveJobRequest = RequestOf<'/v1/orgs/{org}/jobs/{id}/move', 'post'>;
/** The body of `POST /v1/orgs/{org}/pools`. */
export type CreatePoolRequest = RequestOf<'/v1/orgs/{org}/pools', 'post'>;
/** The body of `PATCH /v1/orgs/{org}/pools/{id}`: any of the creation's fields. */
export type UpdatePoolRequest = RequestOf<'/v1/orgs/{org}/pools/{id}', 'patch'>;
/** The paging of `GET /v1/orgs/{org}/pools`. */
export type ListPoolsQuery = QueryOf<'/v1/orgs/{org}/pools', 'get'>;
/** A page of pools: `{items, next_cursor}`. */
export type PoolPage = AnswerOf<'/v1/orgs/{org}/pools', 'get', 200>;
/** A pool of printers. */
export type Pool = PoolPage['items'][number];
/** The filters and paging of `GET /v1/orgs/{org}/printers`. */
export type ListPrintersQuery = QueryOf<'/v1/orgs/{org}/printers', 'get'>;
/** A page of printers: `{printers, next_cursor}`. */
export type PrinterPage = AnswerOf<'/v1/orgs/{org}/printers', 'get', 200>;
/** A printer, as its station reports it. */
export type Printer = PrinterPage['printers'][number];
/** The paging of `GET /v1/orgs/{org}/locations`. */
export type ListLocationsQuery = QueryOf<'/v1/orgs/{org}/locations', 'get'>;
/** A page of locations: `{locations, next_cursor}`. */
export type LocationPage = AnswerOf<'/v1/orgs/{org}/locations', 'get', 200>;
/** A location. */
export type Location = LocationPage['locations'][number];
/** The body of `POST /v1/orgs/{org}/enrollments`. */
export type CreateEnrollmentRequest = RequestOf<'/v1/orgs/{org}/enrollments', 'post'>;
/** A station's enrollment code, as made: its `code` is in this answer only. */
export type Enrollment = AnswerOf<'/v1/orgs/{org}/enrollments', 'post', 201>['enrollment'];
/** What `POST /v1/public/enroll` answers: the station made from the code, and its device token. */
export type EnrolledStation = AnswerOf<'/v1/public/enroll', 'post', 201>;
/** A station, where the agent runs. */
export type Station = EnrolledStation['station'];
/** The body of `POST /v1/orgs/{org}/children`: `{name, reference?}`. */
export type CreateChildOrgRequest = RequestOf<'/v1/orgs/{org}/children', 'post'>;
/** The filter and paging of `GET /v1/orgs/{org}/children`. */
export type ListChildOrgsQuery = QueryOf<'/v1/orgs/{org}/children', 'get'>;
/** A page of child organizations: `{items, next_cursor}`. */
export type ChildOrgPage = AnswerOf<'/v1/orgs/{org}/children', 'get', 200>;
/** A platform's child organization: `{id, name, parent_id, reference, created_at}`. */
export type ChildOrg = ChildOrgPage['items'][number];
/** The range of `GET /v1/orgs/{org}/usage`; `children` is `true` or `false` there. */
type UsageQueryOf = QueryOf<'/v1/orgs/{org}/usage', 'get'>;
/** `spool.usage(...)`: the first and last UTC day (`YYYY-MM-DD`), and the children too or not. */
export type UsageQuery = Omit<UsageQueryOf, 'children'> & { children?: boolean };
/** One organization's figures on one UTC day: jobs, pages, bytes and webhook deliveries. */
export type UsageDay = AnswerOf<'/v1/orgs/{org}/usage', 'get', 200>['items'][number];
/** The error envelope of every failed call: `{error: {code, message, param?, request_id}}`. */
export type ErrorEnvelope = AnswerOf<'/v1/key', 'get', 401>;
/** An upload, as `POST /v1/orgs/{org}/uploads` answers it. */
export type Upload = AnswerOf<'/v1/orgs/{org}/uploads', 'post', 201>['upload'];
/** The types of document an upload takes. */
export type UploadType = 'application/pdf' | 'application/octet-stream' | 'text/plain';

/** A document's bytes as the API answers them (a job's content, its preview). */
export interface JobDocument {
  /** The `Content-Type` of the answer, as `application/pdf` or `image/png`. */
  contentType: string;
  data: Uint8Array;
}
