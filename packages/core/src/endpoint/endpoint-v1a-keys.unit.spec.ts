import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import { decideEndpointUpdate, decideSecretRotation, type SealedV1aKey } from './endpoint-decider.js'
import { signEndpointAttempt } from '../signing/endpoint-signing.js'
import type { LedgerEntry } from '../model/ledger-entry.js'
import { endpointRowFixture } from '@hookledger/testkit/row-fixtures'
import { bytesToBase64, evolveEndpoint, type EndpointRow } from '../model/projections.js'
import { createSecretBox, generateMasterKey } from '../signing/secret-box.js'
import type { SignatureScheme } from '../signing/signature-scheme.js'
import { decodeV1aPublicKey, generateV1aKeyPair, v1aKeyId, type V1aKeyPair } from '../signing/webhook-signature-v1a.js'
import { generateWebhookSecret, secretKeyId } from '../signing/webhook-signature.js'

const box = createSecretBox(generateMasterKey())
const T0 = new Date('2026-05-01T12:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)
const HOUR = 3_600_000
const ACTOR = 'owner:tok1'
const message = { id: 'evt_1', timestamp: 1_777_000_000, body: '{"id":"evt_1"}' }

const sealedKey = (pair: V1aKeyPair): SealedV1aKey => ({ sealed: box.seal(pair.secretKey), public_key: pair.publicKey })

/** An endpoint as create leaves it, for a scheme, with fresh keys. */
function endpoint(scheme: SignatureScheme, over: Partial<EndpointRow> = {}) {
  const secret = generateWebhookSecret()
  const pair = generateV1aKeyPair()
  const hasKey = scheme !== 'v1'
  const row: EndpointRow = endpointRowFixture({
    secret_sealed: box.seal(secret),
    secret_key_id: secretKeyId(secret),
    created_at: T0,
    signature_scheme: scheme,
    v1a_key_sealed: hasKey ? box.seal(pair.secretKey) : null,
    v1a_public_key: hasKey ? pair.publicKey : null,
    ...over,
  })
  return { row, secret, pair }
}

const versionsOf = (header: string) => header.split(' ').map((entry) => entry.split(',')[0])
const v1aVerifies = (entry: string, publicKey: string) =>
  nacl.sign.detached.verify(
    new Uint8Array(Buffer.from(`${message.id}.${message.timestamp}.${message.body}`)),
    new Uint8Array(Buffer.from(entry.slice('v1a,'.length), 'base64')),
    decodeV1aPublicKey(publicKey),
  )

describe('signEndpointAttempt: what the scheme signs', () => {
  it.each<[SignatureScheme, string[]]>([
    ['v1', ['v1']],
    ['v1a', ['v1a']],
    ['v1+v1a', ['v1', 'v1a']],
  ])('%s signs %j', (scheme, versions) => {
    const { row } = endpoint(scheme)
    const signed = signEndpointAttempt(row, box, message, T0)
    expect(versionsOf(signed.headers['webhook-signature'])).toEqual(versions)
  })

  it('a v1 endpoint that once had a key pair (scheme switched back) signs v1 only', () => {
    const { row } = endpoint('v1a', { signature_scheme: 'v1' })
    expect(versionsOf(signEndpointAttempt(row, box, message, T0).headers['webhook-signature'])).toEqual(['v1'])
  })

  it.each<[string, number, string[]]>([
    ['inside the grace window', HOUR - 1, ['v1', 'v1', 'v1a', 'v1a']],
    ['at its end', HOUR, ['v1', 'v1a']],
    ['after it', HOUR + 1, ['v1', 'v1a']],
  ])('previous keys sign %s', (_name, elapsed, versions) => {
    const old = endpoint('v1+v1a')
    const rotated = evolveEndpoint(
      old.row,
      decideSecretRotation(old.row, { ...fresh(), graceMs: HOUR }, T0, ACTOR),
    )!
    const signed = signEndpointAttempt(rotated, box, message, at(elapsed))
    expect(versionsOf(signed.headers['webhook-signature'])).toEqual(versions)
    const v1a = signed.headers['webhook-signature'].split(' ').filter((e) => e.startsWith('v1a,'))
    expect(v1aVerifies(v1a[0]!, rotated.v1a_public_key!)).toBe(true)
    if (v1a.length === 2) expect(v1aVerifies(v1a[1]!, old.pair.publicKey)).toBe(true)
    expect(signed.keyIds.at(-v1a.length)).toBe(v1aKeyId(rotated.v1a_public_key!))
  })

  it('refuses a v1a scheme without a key pair (the database check forbids that row)', () => {
    const { row } = endpoint('v1', { signature_scheme: 'v1a' })
    expect(() => signEndpointAttempt(row, box, message, T0)).toThrow(/no v1a key/)
  })
})

function fresh() {
  const secret = generateWebhookSecret()
  return { secret_sealed: box.seal(secret), secret_key_id: secretKeyId(secret), v1a_key: sealedKey(generateV1aKeyPair()) }
}

const fold = (row: EndpointRow, entries: readonly LedgerEntry[]) =>
  entries.reduce<EndpointRow>((r, e) => evolveEndpoint(r, e)!, row)

describe('decideEndpointUpdate: the scheme', () => {
  it('v1 → v1a adopts the offered key pair', () => {
    const { row } = endpoint('v1')
    const key = sealedKey(generateV1aKeyPair())
    const entries = decideEndpointUpdate(row, { signature_scheme: 'v1a', fresh_v1a_key: key }, at(HOUR), ACTOR)
    expect(entries).toHaveLength(1)
    expect(entries[0]!.payload).toEqual({
      signature_scheme: 'v1a',
      v1a_key_sealed: bytesToBase64(key.sealed),
      v1a_public_key: key.public_key,
    })
    expect(fold(row, entries)).toMatchObject({ signature_scheme: 'v1a', v1a_key_sealed: key.sealed, v1a_public_key: key.public_key })
  })

  it.each<[SignatureScheme, SignatureScheme]>([
    ['v1a', 'v1+v1a'],
    ['v1+v1a', 'v1'],
    ['v1a', 'v1'],
  ])('%s → %s keeps the existing key pair', (from, to) => {
    const { row, pair } = endpoint(from)
    const entries = decideEndpointUpdate(row, { signature_scheme: to, fresh_v1a_key: sealedKey(generateV1aKeyPair()) }, at(HOUR), ACTOR)
    expect(entries[0]!.payload).toEqual({ signature_scheme: to })
    expect(fold(row, entries)).toMatchObject({ signature_scheme: to, v1a_public_key: pair.publicKey })
  })

  it('the same scheme again writes nothing', () => {
    const { row } = endpoint('v1a')
    expect(decideEndpointUpdate(row, { signature_scheme: 'v1a' }, at(HOUR), ACTOR)).toEqual([])
  })

  it('refuses a scheme that needs a key pair when none is offered', () => {
    const { row } = endpoint('v1')
    expect(() => decideEndpointUpdate(row, { signature_scheme: 'v1+v1a' }, at(HOUR), ACTOR)).toThrow(/needs a v1a key pair/)
  })
})

describe('decideSecretRotation', () => {
  it('with a key pair and a grace window: both rotate, both previous ones kept until the same time', () => {
    const { row, pair } = endpoint('v1a')
    const keys = fresh()
    const entry = decideSecretRotation(row, { ...keys, graceMs: 24 * HOUR }, at(HOUR), ACTOR)
    const after = evolveEndpoint(row, entry)!
    expect(after).toMatchObject({
      secret_sealed: keys.secret_sealed,
      prev_secret_sealed: row.secret_sealed,
      prev_secret_expires_at: at(25 * HOUR),
      v1a_key_sealed: keys.v1a_key.sealed,
      v1a_public_key: keys.v1a_key.public_key,
      prev_v1a_key_sealed: row.v1a_key_sealed,
      prev_v1a_public_key: pair.publicKey,
      prev_v1a_key_expires_at: at(25 * HOUR),
    })
    // The ledger holds the private key only sealed.
    expect(JSON.stringify(entry)).not.toContain('whsk_')
  })

  it('without a grace window the previous key pair is dropped', () => {
    const { row } = endpoint('v1+v1a')
    const after = evolveEndpoint(row, decideSecretRotation(row, { ...fresh(), graceMs: 0 }, at(HOUR), ACTOR))!
    expect(after).toMatchObject({ prev_secret_sealed: null, prev_v1a_key_sealed: null, prev_v1a_public_key: null, prev_v1a_key_expires_at: null })
  })

  it('a v1 endpoint without a key pair rotates only its secret (the entry has no v1a fields)', () => {
    const { row } = endpoint('v1')
    const entry = decideSecretRotation(row, { ...fresh(), graceMs: HOUR }, at(HOUR), ACTOR)
    expect(Object.keys(entry.payload).filter((k) => k.includes('v1a'))).toEqual([])
    expect(evolveEndpoint(row, entry)).toMatchObject({ v1a_key_sealed: null, v1a_public_key: null })
  })

  it('refuses to rotate an endpoint with a key pair without a new one', () => {
    const { row } = endpoint('v1a')
    const { v1a_key: _, ...secretOnly } = fresh()
    expect(() => decideSecretRotation(row, { ...secretOnly, graceMs: HOUR }, T0, ACTOR)).toThrow(/needs a new one/)
  })
})

describe('evolveEndpoint: entries written before v1a existed', () => {
  it('endpoint.created without the v1a fields is a v1 endpoint without a key pair', () => {
    const secret = generateWebhookSecret()
    const row = evolveEndpoint(null, {
      occurred_at: T0,
      owner_id: 'o1',
      endpoint_id: '00000000-0000-4000-8000-0000000000e1',
      delivery_id: null,
      event_id: null,
      actor: ACTOR,
      kind: 'endpoint.created',
      payload: { url: 'https://a.example/h', description: '', event_types: ['*'], embed_id: null, secret_sealed: bytesToBase64(box.seal(secret)), secret_key_id: secretKeyId(secret) },
    })
    expect(row).toMatchObject({
      signature_scheme: 'v1',
      v1a_key_sealed: null,
      v1a_public_key: null,
      prev_v1a_key_sealed: null,
      prev_v1a_public_key: null,
      prev_v1a_key_expires_at: null,
    })
  })
})
