/**
 * A platform's child organizations (DESIGN §5, docs/platforms.md): create, list, read and delete
 * them under `/v1/orgs/{org}/children` (`orgs:read`, `orgs:write`). The parent is the organization
 * of the path, which `requireOwnOrg` has checked against the key; the accounts service scopes
 * every read by it, so another's child answers 404 as an unknown one does. A child is deleted as
 * the operator deletes an organization (org-deletion.ts), and what this gateway kept of it is
 * forgotten as soon as nothing reaches it any more.
 */
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { Org } from '../../gen/spool/v1/accounts.js';
import {
  MAX_CHILD_NAME_LENGTH,
  MAX_CHILD_REFERENCE_LENGTH,
} from '../../lib/contracts/child-orgs.js';
import { rfc3339OrNull } from '../../lib/time.js';
import { body } from '../body.js';
import type { ParentLookup } from '../child-orgs.js';
import type { Backends } from '../clients.js';
import type { KeyCache } from '../key-cache.js';
import { answerDeletion, deleteOrg } from '../org-deletion.js';
import { LIST_QUERY, type QuerySpec, readQuery, rejectUnknownParams, textParam } from '../query.js';
import type { GatewayState } from '../state.js';
import { orgOf, param } from './context.js';

type Handler = Middleware<GatewayState>;

const Reference = Type.String({
  maxLength: MAX_CHILD_REFERENCE_LENGTH,
  description: `the platform's own reference for the organization (a customer number, say): at most ${MAX_CHILD_REFERENCE_LENGTH} characters, which the list can filter by`,
});

export const CreateChildBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: MAX_CHILD_NAME_LENGTH,
      description: `a name of 1 to ${MAX_CHILD_NAME_LENGTH} characters`,
    }),
    reference: Type.Optional(Reference),
  },
  { additionalProperties: false },
);

const Id = Type.String({ format: 'uuid' });

/** A child organization, as these routes show it. */
export const ChildOrgSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    parent_id: Type.String({ format: 'uuid', description: 'the organization it is a child of' }),
    reference: Type.String({ description: "the parent's reference for it; empty when none" }),
    created_at: Type.String({ format: 'date-time', description: 'RFC 3339, UTC' }),
  },
  { additionalProperties: false },
);

/** `{org}` */
export const ChildOrgAnswer = Type.Object({ org: ChildOrgSchema }, { additionalProperties: false });

/** What a child's deletion that must go on answers: the operator's deletion's 202. */
export const ChildDeletingAnswer = Type.Object(
  {
    deleting: Type.Literal(true),
    deleted: Type.Integer({ description: 'rows deleted by this request' }),
    message: Type.String(),
  },
  { additionalProperties: false },
);

/** The query of the list of children: `reference` besides paging. */
export const CHILDREN_QUERY = {
  reference: textParam('only the children with exactly this reference', {
    type: 'string',
    maxLength: MAX_CHILD_REFERENCE_LENGTH,
  }),
  ...LIST_QUERY,
} as const satisfies QuerySpec;

export function childOrgView(org: Org | undefined) {
  if (!org) throw new Error('missing org in response');
  return {
    id: org.id,
    name: org.name,
    parent_id: org.parentId,
    reference: org.reference,
    created_at: rfc3339OrNull(org.createdAt),
  };
}

export interface ChildHandlerDeps {
  backends: Backends;
  bodyLimit: number;
  /** The gateway's cache of keys, whose keys of a deleted child go at once. */
  cache: KeyCache;
  /** What the gateway keeps of which organization is whose child (auth.ts `requireOwnOrg`). */
  children: ParentLookup;
}

export function childV1Handlers(deps: ChildHandlerDeps): Record<string, Handler> {
  const { accounts } = deps.backends;
  const child = async (ctx: Parameters<Handler>[0]) => {
    const { org } = await accounts.getChildOrg({ orgId: orgOf(ctx), childId: param(ctx, 'id') });
    if (!org) throw new Error('missing org in response');
    return org;
  };
  return {
    'POST /v1/orgs/:org/children': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, CreateChildBody, deps.bodyLimit);
      const { org } = await accounts.createChildOrg({
        orgId: orgOf(ctx),
        name: req.name,
        reference: req.reference ?? '',
      });
      ctx.status = 201;
      ctx.body = { org: childOrgView(org) };
    },

    'GET /v1/orgs/:org/children': async (ctx) => {
      const query = readQuery(ctx.query, CHILDREN_QUERY);
      const res = await accounts.listChildOrgs({ orgId: orgOf(ctx), ...query });
      ctx.body = { items: res.items.map(childOrgView), next_cursor: res.nextCursor };
    },

    'GET /v1/orgs/:org/children/:id': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      ctx.body = { org: childOrgView(await child(ctx)) };
    },

    // As the operator's deletion of an organization: a large one may take more than one request,
    // and 202 says to send the same DELETE again, which goes on where this one stopped.
    'DELETE /v1/orgs/:org/children/:id': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const { id } = await child(ctx);
      const result = await deleteOrg(deps.backends, id, {
        closed: () => {
          deps.cache.evictOrg(id);
          deps.children.forget(id);
        },
      });
      answerDeletion(ctx, result, 'the child organization');
    },
  };
}
