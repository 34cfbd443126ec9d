import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../database/database.js'
import { ledgerWrite } from '../ledger-write.js'
import { securityEntry } from './security-entry.js'

/** Scopes a token can carry. `operator` tokens are bound to no owner (owner_id `*`). */
export type TokenScope = 'admin' | 'publish' | 'operator'
export const OPERATOR_OWNER = '*'

export interface TokenPrincipal {
  readonly id: string
  readonly owner_id: string
  readonly scopes: TokenScope[]
}

const hash = (token: string) => createHash('sha256').update(token, 'utf8').digest()

/** Creates a token; the plain token is returned once and only its SHA-256 is stored. */
export async function apiTokenCreate(
  db: Db,
  params: { owner_id: string; scopes: readonly TokenScope[]; label?: string; now: Date; actor?: string },
): Promise<{ id: string; token: string }> {
  const id = randomUUID()
  const token = `hl_${randomBytes(32).toString('base64url')}`
  const label = params.label ?? ''
  await db.transaction().execute(async (trx) => {
    // The row follows from the entry (hookledger_write); the hash travels beside it, never in the ledger.
    await ledgerWrite(trx, {
      entries: [securityEntry('token.issued', params, { token_id: id, scopes: [...params.scopes], label })],
      tokenHashes: { [id]: Buffer.from(hash(token)).toString('hex') },
    })
  })
  return { id, token }
}

/** The principal a bearer token stands for, or null if unknown or revoked. */
export async function apiTokenVerify(db: Db, token: string): Promise<TokenPrincipal | null> {
  if (token.length > 200) return null
  const row = await db
    .selectFrom('api_tokens')
    .select(['id', 'owner_id', 'scopes'])
    .where('token_hash', '=', hash(token))
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return row ? { id: row.id, owner_id: row.owner_id, scopes: row.scopes as TokenScope[] } : null
}

/** Lists tokens (never their secrets). */
export async function apiTokenList(db: Db, params: { owner_id?: string }) {
  let q = db
    .selectFrom('api_tokens')
    .select(['id', 'owner_id', 'scopes', 'label', 'created_at', 'revoked_at'])
    .orderBy('created_at')
  if (params.owner_id) q = q.where('owner_id', '=', params.owner_id)
  return q.execute()
}

/** Revokes a token (with its ledger entry); returns false if there was no live token with that id. */
export async function apiTokenRevoke(db: Db, params: { id: string; now: Date; actor?: string }): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const res = await sql<{ owner_id: string }>`
      select owner_id from api_tokens where id = ${params.id}::uuid and revoked_at is null for update
    `.execute(trx)
    const row = res.rows[0]
    if (!row) return false
    await ledgerWrite(trx, { entries: [securityEntry('token.revoked', { ...params, owner_id: row.owner_id }, { token_id: params.id })] })
    return true
  })
}

/** Whether any token exists (first start creates one for owner `default`). */
export async function apiTokenAny(db: Db): Promise<boolean> {
  return (await db.selectFrom('api_tokens').select('id').limit(1).executeTakeFirst()) !== undefined
}
