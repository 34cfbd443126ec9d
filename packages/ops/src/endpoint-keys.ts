import { createHash } from 'node:crypto'
import { signsV1a, v1aKeyId } from '@hookledger/core'
import { endpointV1aKeys, type Db } from '@hookledger/store'

/**
 * An endpoint's published v1a keys (`GET /.well-known/hookledger/keys/:endpoint_id`): the `whpk_`
 * public keys a receiver verifies `v1a` signatures with — the current one, and the previous one
 * while a rotation's grace window lasts — so a receiver can follow a rotation by itself. Public
 * by design: public keys and their expiry, nothing else about the endpoint.
 */

/** Cached this long at most; less when the previous key stops signing sooner. */
export const PUBLISHED_KEYS_MAX_AGE_S = 300

export interface PublishedKey {
  readonly public_key: string
  /** The id `signed_with` names it by. */
  readonly key_id: string
  readonly status: 'current' | 'previous'
  /** When it stops signing: null for the current key (until the next rotation). */
  readonly expires_at: string | null
}

export interface PublishedKeys {
  readonly endpoint_id: string
  readonly keys: readonly PublishedKey[]
}

/** The answer, its ETag (a digest of the body) and how long it may be cached. */
export interface PublishedKeysAnswer {
  readonly body: PublishedKeys
  readonly etag: string
  readonly maxAgeS: number
}

/**
 * The keys of a live endpoint that signs v1a, or null: no such endpoint, a deleted one, or one
 * whose scheme carries no v1a signature (its key pair, if it kept one, signs nothing).
 */
export async function endpointPublishedKeys(db: Db, endpointId: string, now: Date): Promise<PublishedKeysAnswer | null> {
  const row = await endpointV1aKeys(db, endpointId)
  if (!row || !signsV1a(row.signature_scheme) || row.v1a_public_key === null) return null
  const keys: PublishedKey[] = [
    { public_key: row.v1a_public_key, key_id: v1aKeyId(row.v1a_public_key), status: 'current', expires_at: null },
  ]
  let maxAgeS = PUBLISHED_KEYS_MAX_AGE_S
  const expires = row.prev_v1a_key_expires_at
  // The previous key signs strictly before its expiry (core's inGrace), so it is listed until then.
  if (row.prev_v1a_public_key !== null && expires !== null && expires.getTime() > now.getTime()) {
    keys.push({ public_key: row.prev_v1a_public_key, key_id: v1aKeyId(row.prev_v1a_public_key), status: 'previous', expires_at: expires.toISOString() })
    maxAgeS = Math.max(0, Math.min(maxAgeS, Math.floor((expires.getTime() - now.getTime()) / 1000)))
  }
  const body: PublishedKeys = { endpoint_id: row.id, keys }
  const etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`
  return { body, etag, maxAgeS }
}
