/** An organization's templates: create, list, read, change and delete them. */
import { notFound } from '../../../lib/errors.js';
import { requireUuid } from '../../../lib/ids.js';
import { pageLimit } from '../../../lib/paging.js';
import { checkTemplate } from '../content.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function templateHandlers({
  store,
}: Pick<JobsServerDeps, 'store'>): JobsHandlers<
  'createTemplate' | 'listTemplates' | 'getTemplate' | 'updateTemplate' | 'deleteTemplate'
> {
  return {
    async createTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      checkTemplate(req.kind, req.body, req.fields);
      const template = await store.createTemplate({
        orgId,
        name: req.name,
        kind: req.kind,
        body: req.body,
        fields: req.fields,
      });
      return { template };
    },

    async listTemplates(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listTemplates(orgId, pageLimit(req.limit), req.cursor);
    },

    async getTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const template = await store.getTemplate(orgId, requireUuid(req.templateId, 'template'));
      if (!template) throw notFound('no such template');
      return { template };
    },

    async updateTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const current = await store.getTemplate(orgId, requireUuid(req.templateId, 'template'));
      if (!current) throw notFound('no such template');
      const next = {
        id: current.id,
        orgId,
        name: req.name ?? current.name,
        kind: req.kind ?? current.kind,
        body: req.body ?? current.body,
        fields: req.setFields ? req.fields : current.fields,
      };
      checkTemplate(next.kind, next.body, next.fields);
      return { template: await store.updateTemplate(next) };
    },

    async deleteTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      await store.deleteTemplate(orgId, requireUuid(req.templateId, 'template'));
      return {};
    },
  };
}
