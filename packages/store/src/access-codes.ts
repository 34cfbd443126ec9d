import { sql } from 'kysely'
import type { AccessCode } from '@hookledger/core'
import type { Db } from './database.js'
import { ledgerWrite } from './ledger-write.js'
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
    const res = await sql<AccessCodeRow & { created: boolean }>`
      insert into access_codes as c
        (owner_id, id, role_globs, deny_globs, reads_published_slice, expires_at, revoked_at,
         created_at, updated_at)
      values (${ctx.owner_id}, ${input.id}, ${[...input.role_globs]}::text[],
              ${[...input.deny_globs]}::text[], ${input.reads_published_slice}, ${input.expires_at},
              null, ${ctx.now}, ${ctx.now})
      on conflict (owner_id, id) do update set
        role_globs = excluded.role_globs, deny_globs = excluded.deny_globs,
        reads_published_slice = excluded.reads_published_slice, expires_at = excluded.expires_at,
        updated_at = excluded.updated_at
      where c.revoked_at is null
      returning c.*, (xmax = 0) as created
    `.execute(trx)
    const row = res.rows[0]
    if (!row) return 'revoked'
    const { created, ...code } = row
    await ledgerWrite(trx, {
      entries: [
        securityEntry('access_code.put', ctx, {
          access_code_id: code.id,
          role_globs: [...code.role_globs],
          deny_globs: [...code.deny_globs],
          reads_published_slice: code.reads_published_slice,
          expires_at: code.expires_at ? code.expires_at.toISOString() : null,
          created,
        }),
      ],
  })
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
    const res = await sql<AccessCodeRow & { was_live: boolean }>`
      update access_codes set
        revoked_at = coalesce(revoked_at, ${ctx.now}),
        updated_at = case when revoked_at is null then ${ctx.now} else updated_at end
      where owner_id = ${ctx.owner_id} and id = ${id}
      returning *, (select revoked_at is null from access_codes o where o.owner_id = access_codes.owner_id and o.id = access_codes.id) as was_live
    `.execute(trx)
    const found = res.rows[0]
    if (!found) return null
    const { was_live, ...row } = found
    // Only the first revocation is a change worth an entry.
    if (was_live) await ledgerWrite(trx, { entries: [securityEntry('access_code.revoked', ctx, { access_code_id: id })] })
    return row
  })
}

/** One access code of this owner (revoked ones too: their state is worth seeing), or null. */
export async function accessCodeGet(
  db: Db,
  owner_id: string,
  id: string,
): Promise<AccessCodeRow | null> {
  const res = await sql<AccessCodeRow>`
    select * from access_codes where owner_id = ${owner_id} and id = ${id}
  `.execute(db)
  return res.rows[0] ?? null
}
