import { z } from 'zod'
import { SUBJECT_GLOB_MAX_LENGTH } from '@hookledger/core'
import {
  accessCodeGet,
  accessCodePut,
  accessCodeRevoke,
  embedDelete,
  embedGet,
  embedPut,
  type AccessCodeRow,
  type EmbedRow,
} from '@hookledger/store'
import { OpError, notFound } from './op-error.js'
import { defineOp, ok, type OpContext } from './operation.js'
import { isoTimestamp } from './schemas.js'

/** Owner-chosen ids of embeds and access codes: URL-safe, at most 200 characters. */
export const scopeId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'only letters, digits and _ . : -')

/** A subject glob such as `wiki://software/**` (see core `matchesSubjectGlob`). */
export const subjectGlob = z.string().min(1).max(SUBJECT_GLOB_MAX_LENGTH)

const ownerNow = (ctx: OpContext) => ({
  owner_id: ctx.principal.owner_id,
  now: ctx.deps.clock.now(),
  actor: ctx.actor,
})
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null)

export const accessCodeSchema = z.object({
  id: z.string(),
  role_globs: z.array(z.string()),
  deny_globs: z.array(z.string()),
  reads_published_slice: z.boolean(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
})

function accessCodeView(row: AccessCodeRow): z.input<typeof accessCodeSchema> {
  return {
    id: row.id,
    role_globs: row.role_globs,
    deny_globs: row.deny_globs,
    reads_published_slice: row.reads_published_slice,
    expires_at: isoOrNull(row.expires_at),
    revoked_at: isoOrNull(row.revoked_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

export const embedSchema = z.object({
  id: z.string(),
  access_code_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
})

const embedView = (row: EmbedRow): z.input<typeof embedSchema> => ({
  id: row.id,
  access_code_id: row.access_code_id,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

export const accessCodesPut = defineOp({
  name: 'access_codes.put',
  summary:
    'Create or re-scope an access code: role globs minus deny globs, ' +
    'optionally the published slice only',
  scope: 'admin',
  http: { method: 'PUT', path: '/api/admin/access_codes/:id' },
  statuses: [200, 201],
  input: z.strictObject({
    id: scopeId,
    role_globs: z.array(subjectGlob).min(1).max(64),
    deny_globs: z.array(subjectGlob).max(64).default([]),
    // Fails closed: a code sees only published notes unless the owner says otherwise.
    reads_published_slice: z.boolean().default(true),
    expires_at: isoTimestamp.nullable().default(null),
  }),
  output: accessCodeSchema,
  async handler(ctx, input) {
    const res = await accessCodePut(ctx.deps.db, ownerNow(ctx), {
      ...input,
      expires_at: input.expires_at === null ? null : new Date(input.expires_at),
    })
    if (res === 'revoked') {
      throw new OpError('access_code_revoked',
        'this access code is revoked; revocation is final, use a new id',
      )
    }
    return { status: res.created ? 201 : 200, body: accessCodeView(res.row) }
  },
})

export const accessCodesGet = defineOp({
  name: 'access_codes.get',
  summary: 'Read one access code',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/access_codes/:id' },
  input: z.strictObject({ id: scopeId }),
  output: accessCodeSchema,
  async handler(ctx, input) {
    const row = await accessCodeGet(ctx.deps.db, ctx.principal.owner_id, input.id)
    if (!row) throw notFound('access code')
    return ok(accessCodeView(row))
  },
})

export const accessCodesRevoke = defineOp({
  name: 'access_codes.revoke',
  summary: 'Revoke an access code: from the next event on, its embeds admit nothing',
  scope: 'admin',
  http: { method: 'POST', path: '/api/admin/access_codes/:id/revoke' },
  input: z.strictObject({ id: scopeId }),
  output: accessCodeSchema,
  async handler(ctx, input) {
    const row = await accessCodeRevoke(ctx.deps.db, ownerNow(ctx), input.id)
    if (!row) throw notFound('access code')
    return ok(accessCodeView(row))
  },
})

export const embedsPut = defineOp({
  name: 'embeds.put',
  summary: 'Create an embed, or point it at another access code (endpoints name it as embed_id)',
  scope: 'admin',
  http: { method: 'PUT', path: '/api/admin/embeds/:id' },
  statuses: [200, 201],
  input: z.strictObject({ id: scopeId, access_code_id: scopeId }),
  output: embedSchema,
  async handler(ctx, input) {
    const res = await embedPut(ctx.deps.db, ownerNow(ctx), input)
    if (res === 'unknown_access_code') {
      throw new OpError('unknown_access_code',
        'access_code_id: no such access code',
        'access_code_id',
      )
    }
    if (res === 'access_code_revoked') {
      // A reference to a revoked code is bad input (422, like an unknown one), not a conflict.
      throw new OpError('revoked_access_code',
        'access_code_id: the access code is revoked',
        'access_code_id',
      )
    }
    return { status: res.created ? 201 : 200, body: embedView(res.row) }
  },
})

export const embedsGet = defineOp({
  name: 'embeds.get',
  summary: 'Read one embed',
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/embeds/:id' },
  input: z.strictObject({ id: scopeId }),
  output: embedSchema,
  async handler(ctx, input) {
    const row = await embedGet(ctx.deps.db, ctx.principal.owner_id, input.id)
    if (!row) throw notFound('embed')
    return ok(embedView(row))
  },
})

export const embedsDelete = defineOp({
  name: 'embeds.delete',
  summary: 'Delete an embed: from the next event on, endpoints naming it get no corpus notes',
  scope: 'admin',
  http: { method: 'DELETE', path: '/api/admin/embeds/:id' },
  input: z.strictObject({ id: scopeId }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  async handler(ctx, input) {
    const row = await embedDelete(ctx.deps.db, ownerNow(ctx), input.id)
    if (!row) throw notFound('embed')
    return ok({ id: row.id, deleted: true as const })
  },
})
