import { createHash, sign } from 'node:crypto'
import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import {
  CHECKPOINT_GENESIS_HASH,
  checkpointHash,
  checkpointMessage,
  generateLedgerSigningKey,
  type LedgerCheckpoint,
  ledgerKeyId,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  signCheckpoint,
  type UnsignedLedgerCheckpoint,
  verifyCheckpointSignature,
} from './ledger-checkpoint.js'

/** RFC 8032 §7.1 TEST 1: seed, public key, and the signature of the empty message. */
const RFC8032 = {
  seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  emptySignature:
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
}
const SECRET = `hlsk_${Buffer.from(RFC8032.seed, 'hex').toString('base64url')}`
const KEY = parseLedgerSigningKey(SECRET)
const PUBLIC = parseLedgerPublicKey(KEY.publicKey)

const FIELDS: Omit<LedgerCheckpoint, 'signature' | 'key_id'> = {
  seq: 1,
  first: { tx_id: '700', position: '1' },
  last: { tx_id: '701', position: '2' },
  count: 2,
  total: 2,
  chain_hash: 'a'.repeat(64),
  merkle_root: 'b'.repeat(64),
  prev_checkpoint_hash: CHECKPOINT_GENESIS_HASH,
  created_at: '2026-12-01T09:00:00.000Z',
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
const naclVerify = (cp: LedgerCheckpoint, publicKey = PUBLIC) =>
  nacl.sign.detached.verify(checkpointMessage(cp), Buffer.from(cp.signature, 'base64'), publicKey)

describe('checkpointMessage and checkpointHash', () => {
  const unsigned: UnsignedLedgerCheckpoint = { ...FIELDS, key_id: '0123456789abcdef' }

  it('is the prefix line plus the canonical JSON of the signed members, exactly', () => {
    expect(text(checkpointMessage(unsigned))).toBe(
      'hookledger.checkpoint.v1\n' +
        `{"chain_hash":"${'a'.repeat(64)}","count":2,"created_at":"2026-12-01T09:00:00.000Z",` +
        '"first":{"position":"1","tx_id":"700"},"key_id":"0123456789abcdef",' +
        `"last":{"position":"2","tx_id":"701"},"merkle_root":"${'b'.repeat(64)}",` +
        `"prev_checkpoint_hash":"${'0'.repeat(64)}","seq":1,"total":2}`,
    )
  })

  it('leaves out the signature and any extra property (of the checkpoint or its refs)', () => {
    const noisy = {
      ...unsigned,
      signature: 'x',
      id: 99,
      first: { ...FIELDS.first, extra: true },
    } as UnsignedLedgerCheckpoint
    expect(checkpointMessage(noisy)).toEqual(checkpointMessage(unsigned))
  })

  it('writes an empty ledger as null refs', () => {
    const empty = { ...unsigned, first: null, last: null, count: 0, total: 0 }
    expect(text(checkpointMessage(empty))).toContain('"first":null')
    expect(text(checkpointMessage(empty))).toContain('"last":null')
  })

  it('the hash is SHA-256 of the message bytes, in lowercase hex', () => {
    const expected = createHash('sha256').update(checkpointMessage(unsigned)).digest('hex')
    expect(checkpointHash(unsigned)).toBe(expected)
    expect(checkpointHash({ ...unsigned, seq: 2 })).not.toBe(expected)
  })

  it.each<[string, Partial<Record<keyof UnsignedLedgerCheckpoint, unknown>>, RegExp]>([
    ['seq 0', { seq: 0 }, /seq must be a positive integer/],
    ['fractional seq', { seq: 1.5 }, /seq/],
    ['negative count', { count: -1 }, /count must be a non-negative integer/],
    ['total as text', { total: '2' }, /total/],
    ['uppercase hex', { chain_hash: 'A'.repeat(64) }, /chain_hash must be 64 lowercase hex/],
    ['a short root', { merkle_root: 'b'.repeat(62) }, /merkle_root/],
    ['a missing prev hash', { prev_checkpoint_hash: undefined }, /prev_checkpoint_hash/],
    ['a local created_at', { created_at: '2026-12-01T10:00:00+01:00' }, /created_at/],
    ['an empty key_id', { key_id: '' }, /key_id/],
    ['first as a number', { first: 1 }, /first must be null or/],
    ['last with a numeric position', { last: { tx_id: '1', position: 2 } }, /last must be null or/],
    ['first missing (undefined)', { first: undefined }, /first must be null or/],
  ])('throws on %s', (_name, over, message) => {
    expect(() => checkpointMessage({ ...unsigned, ...over } as UnsignedLedgerCheckpoint)).toThrow(message)
  })
})

describe('signing keys', () => {
  it('RFC 8032 TEST 1: our public key and signature are the published ones', () => {
    expect(Buffer.from(PUBLIC).toString('hex')).toBe(RFC8032.publicKey)
    expect(sign(null, Buffer.alloc(0), KEY.privateKey).toString('hex')).toBe(RFC8032.emptySignature)
  })

  it('tweetnacl derives the same public key from the seed', () => {
    const pair = nacl.sign.keyPair.fromSeed(Buffer.from(RFC8032.seed, 'hex'))
    expect(Buffer.from(pair.publicKey)).toEqual(Buffer.from(PUBLIC))
    for (let i = 0; i < 5; i++) {
      const { secret } = generateLedgerSigningKey()
      const seed = Buffer.from(secret.slice('hlsk_'.length), 'base64url')
      const fresh = parseLedgerSigningKey(secret)
      expect(Buffer.from(nacl.sign.keyPair.fromSeed(seed).publicKey)).toEqual(
        Buffer.from(parseLedgerPublicKey(fresh.publicKey)),
      )
    }
  })

  it('generates hlsk_ + base64url(32 bytes), with its public key and key id', () => {
    const generated = generateLedgerSigningKey()
    expect(generated.secret).toMatch(/^hlsk_[A-Za-z0-9_-]{43}$/)
    expect(generated.publicKey).toMatch(/^hlpk_[A-Za-z0-9_-]{43}$/)
    const parsed = parseLedgerSigningKey(generated.secret)
    expect(parsed.publicKey).toBe(generated.publicKey)
    expect(parsed.keyId).toBe(generated.keyId)
    expect(generateLedgerSigningKey().secret).not.toBe(generated.secret)
  })

  it('the key id is the first 16 hex digits of SHA-256 of the raw public key', () => {
    const expected = createHash('sha256').update(PUBLIC).digest('hex').slice(0, 16)
    expect(KEY.keyId).toBe(expected)
    expect(ledgerKeyId(PUBLIC)).toBe(expected)
    expect(KEY.keyId).toMatch(/^[0-9a-f]{16}$/)
  })

  it('accepts a trailing newline, as read from a file', () => {
    expect(parseLedgerSigningKey(`${SECRET}\n`).keyId).toBe(KEY.keyId)
    expect(parseLedgerPublicKey(`${KEY.publicKey}\n`)).toEqual(PUBLIC)
  })

  const body = SECRET.slice('hlsk_'.length)
  it.each([
    ['no prefix', body, /must start with "hlsk_"/],
    ['the public prefix', `hlpk_${body}`, /must start with "hlsk_"/],
    ['an empty key', 'hlsk_', /unpadded base64url of 32 bytes/],
    ['standard base64 characters', `hlsk_${body.slice(0, 42)}+`, /base64url/],
    ['padding', `hlsk_${body}=`, /base64url/],
    ['an inner space', `hlsk_${body.slice(0, 20)} ${body.slice(20)}`, /base64url/],
    ['31 bytes', `hlsk_${Buffer.alloc(31, 1).toString('base64url')}`, /32 bytes/],
    ['33 bytes', `hlsk_${Buffer.alloc(33, 1).toString('base64url')}`, /32 bytes/],
    // 43 characters carry 258 bits: a last character with the spare bits set is not canonical.
    ['a non-canonical last character', `hlsk_${body.slice(0, 42)}B`, /base64url/],
  ])('parseLedgerSigningKey refuses %s, without echoing it', (_name, secret, message) => {
    expect(() => parseLedgerSigningKey(secret)).toThrow(message)
    expect(() => parseLedgerSigningKey(secret)).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(body.slice(0, 20)) }),
    )
  })

  it.each([
    ['the secret prefix', KEY.publicKey.replace('hlpk_', 'hlsk_'), /must start with "hlpk_"/],
    ['a truncated key', KEY.publicKey.slice(0, -2), /32 bytes/],
    ['not a string', 42, /must be a string/],
  ])('parseLedgerPublicKey refuses %s', (_name, value, message) => {
    expect(() => parseLedgerPublicKey(value as string)).toThrow(message)
  })
})

describe('signCheckpoint and verifyCheckpointSignature', () => {
  const cp = signCheckpoint(KEY, FIELDS)

  it('sets key_id, keeps the fields, and signs checkpointMessage', () => {
    expect(cp).toEqual({ ...FIELDS, key_id: KEY.keyId, signature: expect.any(String) })
    expect(cp.signature).toMatch(/^[A-Za-z0-9+/]{86}==$/)
    expect(verifyCheckpointSignature(cp, PUBLIC)).toBe(true)
  })

  it('tweetnacl verifies our signature, and its own signature is byte-for-byte ours', () => {
    expect(naclVerify(cp)).toBe(true)
    const pair = nacl.sign.keyPair.fromSeed(Buffer.from(RFC8032.seed, 'hex'))
    const theirs = nacl.sign.detached(checkpointMessage(cp), pair.secretKey)
    expect(Buffer.from(theirs).toString('base64')).toBe(cp.signature)
  })

  it('signs only the known fields, whatever else the input carries', () => {
    const noisy = signCheckpoint(KEY, { ...FIELDS, extra: 1 } as typeof FIELDS)
    expect(noisy).not.toHaveProperty('extra')
    expect(noisy.signature).toBe(cp.signature)
  })

  it.each<[string, Partial<Record<keyof LedgerCheckpoint, unknown>>]>([
    ['seq', { seq: 2 }],
    ['first', { first: { tx_id: '700', position: '3' } }],
    ['first → null', { first: null }],
    ['last', { last: { tx_id: '702', position: '2' } }],
    ['count', { count: 3 }],
    ['total', { total: 1 }],
    ['chain_hash', { chain_hash: 'c'.repeat(64) }],
    ['merkle_root', { merkle_root: `${'b'.repeat(63)}c` }],
    ['prev_checkpoint_hash', { prev_checkpoint_hash: `${'0'.repeat(63)}1` }],
    ['created_at', { created_at: '2026-12-01T09:00:00.001Z' }],
  ])('a changed %s fails, with our verifier and with tweetnacl', (_name, over) => {
    const altered = { ...cp, ...over } as LedgerCheckpoint
    expect(verifyCheckpointSignature(altered, PUBLIC)).toBe(false)
    expect(naclVerify(altered)).toBe(false)
  })

  it('another key fails; a key_id naming another key fails even when the signature is good', () => {
    const other = parseLedgerSigningKey(generateLedgerSigningKey().secret)
    const otherPublic = parseLedgerPublicKey(other.publicKey)
    expect(verifyCheckpointSignature(cp, otherPublic)).toBe(false)
    expect(naclVerify(cp, otherPublic)).toBe(false)
    // Signed by KEY while claiming to be other's: a well-formed signature, a false claim.
    const unsigned = { ...FIELDS, key_id: other.keyId }
    const claim = {
      ...unsigned,
      signature: sign(null, checkpointMessage(unsigned), KEY.privateKey).toString('base64'),
    }
    expect(naclVerify(claim)).toBe(true)
    expect(verifyCheckpointSignature(claim, PUBLIC)).toBe(false)
  })

  it.each<[string, unknown, Uint8Array]>([
    ['an empty signature', '', PUBLIC],
    ['a signature without padding', cp.signature.replace(/==$/, ''), PUBLIC],
    ['a base64url signature', Buffer.from(cp.signature, 'base64').toString('base64url'), PUBLIC],
    ['a truncated signature', Buffer.from(cp.signature, 'base64').subarray(1).toString('base64'), PUBLIC],
    ['a signature as bytes', Buffer.from(cp.signature, 'base64'), PUBLIC],
    ['a 31-byte public key', cp.signature, PUBLIC.subarray(1)],
  ])('is false (not a throw) on %s', (_name, signature, publicKey) => {
    const altered = { ...cp, signature } as LedgerCheckpoint
    expect(verifyCheckpointSignature(altered, publicKey)).toBe(false)
  })

  it('is false on a checkpoint that is not even well-formed', () => {
    expect(verifyCheckpointSignature({ ...cp, seq: -1 }, PUBLIC)).toBe(false)
    expect(verifyCheckpointSignature(null as unknown as LedgerCheckpoint, PUBLIC)).toBe(false)
  })

  it('signCheckpoint refuses a malformed checkpoint', () => {
    expect(() => signCheckpoint(KEY, { ...FIELDS, chain_hash: 'nope' })).toThrow(/chain_hash/)
  })
})

describe('a checkpoint carrying a projection snapshot', () => {
  const key = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 21).toString('base64url')}`)
  const publicKey = parseLedgerPublicKey(key.publicKey)
  const fields = {
    seq: 3,
    first: null,
    last: { tx_id: '900', position: '40' },
    count: 0,
    total: 40,
    chain_hash: 'a'.repeat(64),
    merkle_root: 'b'.repeat(64),
    prev_checkpoint_hash: 'c'.repeat(64),
    created_at: '2026-12-01T10:00:00.000Z',
  }
  const snapshot = { seq: 1, before_position: '41', horizon: '901', digest: 'd'.repeat(64), endpoints: 2, deliveries: 7 }

  it('signs the descriptor inside its message; without one the message is exactly the old one', () => {
    const plain = signCheckpoint(key, fields)
    const carrying = signCheckpoint(key, { ...fields, snapshot })
    expect(new TextDecoder().decode(checkpointMessage(plain))).not.toContain('snapshot')
    expect(new TextDecoder().decode(checkpointMessage(carrying))).toContain(
      '"snapshot":{"before_position":"41","deliveries":7,"digest":"' + 'd'.repeat(64) + '","endpoints":2,"horizon":"901","seq":1}',
    )
    expect(verifyCheckpointSignature(carrying, publicKey)).toBe(true)
    expect(verifyCheckpointSignature({ ...carrying, snapshot: { ...snapshot, deliveries: 8 } }, publicKey)).toBe(false)
    expect(verifyCheckpointSignature({ ...carrying, snapshot: undefined }, publicKey)).toBe(false)
    expect(verifyCheckpointSignature({ ...plain, snapshot: null }, publicKey)).toBe(true)
  })

  it.each([
    ['a digest that is not hex', { digest: 'xyz' }, 'checkpoint snapshot digest must be 64 lowercase hex digits'],
    ['a position that is not decimal', { before_position: '4a' }, 'checkpoint snapshot before_position must be a decimal string'],
    ['a negative count', { endpoints: -1 }, 'checkpoint snapshot endpoints must be a non-negative integer'],
  ])('refuses %s', (_name, over, message) => {
    expect(() => signCheckpoint(key, { ...fields, snapshot: { ...snapshot, ...over } })).toThrow(message)
  })
})
