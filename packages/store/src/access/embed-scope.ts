import { sql } from 'kysely'
import { allowsCorpusEntry, corpusEntryFromEvent, type AccessCode } from '@hookledger/core'
import type { AccessCodeRow } from './access-codes.js'
import type { Db } from '../database/database.js'
import { ledgerWrite } from '../ledger-write.js'
import { securityEntry } from './security-entry.js'
import type { EmbedAdmits } from '../delivery/fanout.js'

/** A row of `embeds`: a place the owner's content is shown under one access code. */
export interface EmbedRow {
  readonly owner_id: string
  readonly id: string
  readonly access_code_id: string
  readonly deleted_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

/**
 * Creates an embed, or points an existing one at another code. Putting a deleted embed brings
 * it back (the owner asked for it by name). The code must be one of this owner's live codes.
 */
export async function embedPut(
  db: Db,
  ctx: { owner_id: string; now: Date; actor?: string },
  input: { id: string; access_code_id: string },
): Promise<{ row: EmbedRow; created: boolean } | 'unknown_access_code' | 'access_code_revoked'> {
  return db.transaction().execute(async (trx) => {
    // `for share` keeps the code from being revoked between this check and the insert.
    const code = (
      await sql<Pick<AccessCodeRow, 'revoked_at'>>`
        select revoked_at from access_codes
        where owner_id = ${ctx.owner_id} and id = ${input.access_code_id} for share
      `.execute(trx)
    ).rows[0]
    if (!code) return 'unknown_access_code'
    if (code.revoked_at !== null) return 'access_code_revoked'
    const created = (await sql<{ '?column?': number }>`select 1 from embeds where owner_id = ${ctx.owner_id} and id = ${input.id} for update`.execute(trx)).rows.length === 0
    await ledgerWrite(trx, { entries: [securityEntry('embed.put', ctx, { embed_id: input.id, access_code_id: input.access_code_id, created })] })
    const row = (await trx.selectFrom('embeds').selectAll().where('owner_id', '=', ctx.owner_id).where('id', '=', input.id).executeTakeFirst())!
    return { row, created }
  })
}

/** Deletes a live embed (soft: the row stays for audit). Null when there is no live one. */
export async function embedDelete(
  db: Db,
  ctx: { owner_id: string; now: Date; actor?: string },
  id: string,
): Promise<EmbedRow | null> {
  return db.transaction().execute(async (trx) => {
    const live = (await sql<{ '?column?': number }>`select 1 from embeds where owner_id = ${ctx.owner_id} and id = ${id} and deleted_at is null for update`.execute(trx)).rows.length > 0
    if (!live) return null
    await ledgerWrite(trx, { entries: [securityEntry('embed.deleted', ctx, { embed_id: id })] })
    return (await trx.selectFrom('embeds').selectAll().where('owner_id', '=', ctx.owner_id).where('id', '=', id).executeTakeFirst())!
  })
}

/** One live embed of this owner, or null (a deleted one reads as missing). */
export async function embedGet(db: Db, owner_id: string, id: string): Promise<EmbedRow | null> {
  const row = await db
    .selectFrom('embeds')
    .selectAll()
    .where('owner_id', '=', owner_id)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return row ?? null
}

/** The access code a live embed of this owner stands under, or null (no embed, deleted embed). */
export async function embedAccessCode(
  db: Db,
  owner_id: string,
  embed_id: string,
): Promise<AccessCode | null> {
  const res = await sql<AccessCode>`
    select c.role_globs, c.deny_globs, c.reads_published_slice, c.revoked_at, c.expires_at
    from embeds e join access_codes c on c.owner_id = e.owner_id and c.id = e.access_code_id
    where e.owner_id = ${owner_id} and e.id = ${embed_id} and e.deleted_at is null
  `.execute(db)
  return res.rows[0] ?? null
}

/**
 * The shipped implementation of the embed scope port: reads the embed and its code fresh for
 * every question (a code can be revoked or re-scoped between two events) and answers with
 * core's single ACL decision `allowsCorpusEntry`. A missing or deleted embed admits nothing;
 * so does a revoked or expired code. `now` is the fan-out's clock, never the database's.
 */
export function createTableEmbedAdmits(db: Db): EmbedAdmits {
  return async (embedId, event, now) => {
    const code = await embedAccessCode(db, event.owner_id, embedId)
    if (code === null) return false
    return allowsCorpusEntry(code, corpusEntryFromEvent(event), now)
  }
}
