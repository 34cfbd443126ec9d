import { sql } from 'kysely'
import type { AccessCode } from '@hookledger/core'
import type { Db } from '../database/database.js'
import { ledgerWrite } from '../ledger-write.js'
import { securityEntry } from './security-entry.js'

/** A row of `access_codes`: the scope an embed's endpoints see. */
export interface AccessCodeRow extends AccessCode {
  readonly owner_id: string
  readonly id: string
  readonly role_globs: string[]
  readonly deny_globs: string[]
  readonly created_at: Date
  readonly updated_at: Date
}

/** What `access_codes.put` writes. */
export interface AccessCodeInput {
  readonly id: string
  readonly role_globs: readonly string[]
  readonly deny_globs: readonly string[]
  readonly reads_published_slice: boolean
  readonly expires_at: Date | null
}

/**
 * Creates or re-scopes an access code of this owner. A revoked code stays revoked: the answer
 * is `'revoked'` and nothing changes (revocation is final, so a put cannot resurrect it).
 */
export async function accessCodePut(
  db: Db,
  ctx: { owner_id: string; now: Date; actor?: string },
  input: AccessCodeInput,
): Promise<{ row: AccessCodeRow; created: boolean } | 'revoked'> {
  return db.transaction().execute(async (trx) => {
    // The row follows from the entry (hookledger_write): read what is there, then write the entry.
    const existing = (
      await sql<{ revoked_at: Date | null }>`
        select revoked_at from access_codes where owner_id = ${ctx.owner_id} and id = ${input.id} for update
      `.execute(trx)
    ).rows[0]
    if (existing && existing.revoked_at !== null) return 'revoked'
    const created = existing === undefined
    await ledgerWrite(trx, {
      entries: [
        securityEntry('access_code.put', ctx, {
          access_code_id: input.id,
          role_globs: [...input.role_globs],
          deny_globs: [...input.deny_globs],
          reads_published_slice: input.reads_published_slice,
          expires_at: input.expires_at ? input.expires_at.toISOString() : null,
          created,
        }),
      ],
    })
    const code = (await trx.selectFrom('access_codes').selectAll().where('owner_id', '=', ctx.owner_id).where('id', '=', input.id).executeTakeFirst())!
    return { row: code, created }
  })
}

/** Revokes a code; the first revocation time is kept. Null when the owner has no such code. */
export async function accessCodeRevoke(
  db: Db,
  ctx: { owner_id: string; now: Date; actor?: string },
  id: string,
): Promise<AccessCodeRow | null> {
  return db.transaction().execute(async (trx) => {
    const found = (
      await sql<{ revoked_at: Date | null }>`select revoked_at from access_codes where owner_id = ${ctx.owner_id} and id = ${id} for update`.execute(trx)
    ).rows[0]
    if (!found) return null
    // Only the first revocation is a change worth an entry.
    if (found.revoked_at === null) await ledgerWrite(trx, { entries: [securityEntry('access_code.revoked', ctx, { access_code_id: id })] })
    return (await trx.selectFrom('access_codes').selectAll().where('owner_id', '=', ctx.owner_id).where('id', '=', id).executeTakeFirst())!
  })
}

/** One access code of this owner (revoked ones too: their state is worth seeing), or null. */
export async function accessCodeGet(
  db: Db,
  owner_id: string,
  id: string,
): Promise<AccessCodeRow | null> {
  const row = await db.selectFrom('access_codes').selectAll().where('owner_id', '=', owner_id).where('id', '=', id).executeTakeFirst()
  return row ?? null
}
