import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  CHAIN_GENESIS,
  chainNext,
  type ChainRow,
  ledgerContentHash,
  ledgerLeafHash,
  ledgerLeafHashAt,
  ledgerRowBytes,
} from './ledger-row-encoding.js'

/** The example of the header comment. */
const ROW: ChainRow = {
  position: '42',
  tx_id: '1007',
  occurred_at: '2026-12-01T09:00:00.123000Z',
  owner_id: 'own_1',
  kind: 'endpoint.disabled',
  endpoint_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  delivery_id: null,
  event_id: null,
  payload: { reason: 'manual' },
  actor: 'operator',
}

const ROW_TEXT =
  '["hookledger.ledger.v1","42","1007","2026-12-01T09:00:00.123000Z","own_1",' +
  '"endpoint.disabled","7c9e6679-7425-40de-944b-e07fc1f90ae7",null,null,' +
  '{"reason":"manual"},"operator"]'

const CONTENT_TEXT =
  '["hookledger.ledger.content.v1","2026-12-01T09:00:00.123000Z","own_1",' +
  '"endpoint.disabled","7c9e6679-7425-40de-944b-e07fc1f90ae7",null,null,' +
  '{"reason":"manual"},"operator"]'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const sha256Hex = (...parts: (string | Uint8Array)[]) => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return hash.digest('hex')
}

describe('ledgerRowBytes: the published encoding', () => {
  it('is the UTF-8 of the canonical 11-element array, exactly', () => {
    expect(Buffer.from(ledgerRowBytes(ROW)).toString('utf8')).toBe(ROW_TEXT)
  })

  it('pins the example hashes (a change here breaks every published proof)', () => {
    // The literal texts hashed directly, and the same values frozen as hex.
    expect(hex(ledgerLeafHash(ROW))).toBe(sha256Hex(Uint8Array.of(0), ROW_TEXT))
    expect(hex(ledgerContentHash(ROW))).toBe(sha256Hex(CONTENT_TEXT))
    expect(hex(chainNext(CHAIN_GENESIS, ROW))).toBe(sha256Hex(new Uint8Array(32), ROW_TEXT))
    expect(hex(ledgerLeafHash(ROW))).toBe('1ab494344831ca9d3defbea1c7e09a346c4a2f10c1f7b51e026fbde9f18b9a8a')
    expect(hex(ledgerContentHash(ROW))).toBe('b79f9fab2b91349a6134af96453a805ce486d56bcf4be7898d6e3cab8ce7f4e8')
    expect(hex(chainNext(CHAIN_GENESIS, ROW))).toBe('2d5b7850a89c1d304066d970a1117c07d2f30d72b680809596526a84eb115414')
  })

  it('does not depend on the key order or number spelling of the payload', () => {
    const a = { ...ROW, payload: JSON.parse('{"b":1.50,"a":[1E2,{"y":null,"x":"é"}]}') as unknown }
    const b = { ...ROW, payload: { a: [100, { x: 'é', y: null }], b: 1.5 } }
    expect(ledgerRowBytes(a)).toEqual(ledgerRowBytes(b))
    expect(Buffer.from(ledgerRowBytes(a)).toString('utf8')).toContain('{"a":[100,{"x":"é","y":null}],"b":1.5}')
  })

  it('writes non-ASCII as UTF-8', () => {
    const bytes = ledgerRowBytes({ ...ROW, actor: 'owner:ü' })
    expect(hex(bytes)).toContain(Buffer.from('"owner:\u00fc"', 'utf8').toString('hex'))
  })
})

describe('leaf hash, content hash and chain', () => {
  it('CHAIN_GENESIS is 32 zero bytes', () => {
    expect(CHAIN_GENESIS).toEqual(new Uint8Array(32))
  })

  it('the leaf hash is SHA-256(0x00 ‖ row bytes); the chain step is SHA-256(prev ‖ row bytes)', () => {
    const next = { ...ROW, position: '43', payload: { reason: 'failing' } }
    const head1 = chainNext(CHAIN_GENESIS, ROW)
    const head2 = chainNext(head1, next)
    expect(hex(head2)).toBe(sha256Hex(head1, ledgerRowBytes(next)))
    expect(hex(ledgerLeafHash(next))).toBe(sha256Hex(Uint8Array.of(0), ledgerRowBytes(next)))
    // The chain is order-dependent.
    expect(hex(chainNext(chainNext(CHAIN_GENESIS, next), ROW))).not.toBe(hex(head2))
  })

  it.each<[keyof ChainRow, unknown, boolean]>([
    // [field, other value, does the content hash change too?]
    ['position', '43', false],
    ['tx_id', '1008', false],
    ['occurred_at', '2026-12-01T09:00:00.123001Z', true],
    ['owner_id', 'own_2', true],
    ['kind', 'endpoint.enabled', true],
    ['endpoint_id', null, true],
    ['delivery_id', '7c9e6679-7425-40de-944b-e07fc1f90ae7', true],
    ['event_id', '', true],
    ['payload', { reason: 'Manual' }, true],
    ['actor', 'system', true],
  ])('changing %s changes the leaf hash (content hash changes: %s)', (field, value, contentChanges) => {
    const other = { ...ROW, [field]: value } as ChainRow
    expect(hex(ledgerLeafHash(other))).not.toBe(hex(ledgerLeafHash(ROW)))
    expect(hex(ledgerContentHash(other)) !== hex(ledgerContentHash(ROW))).toBe(contentChanges)
  })

  it('refuses a chain head that is not 32 bytes', () => {
    expect(() => chainNext(new Uint8Array(31), ROW)).toThrow(/32 bytes/)
  })
})

describe('row validation', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['position with a leading zero', { position: '042' }, /position must be a canonical decimal/],
    ['negative position', { position: '-1' }, /position must be a canonical decimal/],
    ['position as a number', { position: 42 }, /position must be a canonical decimal string, got number/],
    ['empty tx_id', { tx_id: '' }, /tx_id must be a canonical decimal/],
    ['tx_id with a space', { tx_id: ' 1007' }, /tx_id must be a canonical decimal/],
    ['tx_id in hex', { tx_id: '0x3ef' }, /tx_id must be a canonical decimal/],
    ['milliseconds only', { occurred_at: '2026-12-01T09:00:00.123Z' }, /occurred_at must look like/],
    ['an offset instead of Z', { occurred_at: '2026-12-01T09:00:00.123000+00:00' }, /occurred_at/],
    ['a space separator', { occurred_at: '2026-12-01 09:00:00.123000Z' }, /occurred_at/],
    ['month 13', { occurred_at: '2026-13-01T09:00:00.123000Z' }, /occurred_at/],
    ['hour 24', { occurred_at: '2026-12-01T24:00:00.000000Z' }, /occurred_at/],
    ['a Date object', { occurred_at: new Date() }, /occurred_at .* got object/],
    ['owner_id null', { owner_id: null }, /owner_id must be a string, got null/],
    ['kind missing', { kind: undefined }, /kind must be a string/],
    ['endpoint_id missing (not null)', { endpoint_id: undefined }, /endpoint_id must be a string or null/],
    ['delivery_id as a number', { delivery_id: 7 }, /delivery_id must be a string or null/],
    ['payload missing', { payload: undefined }, /payload is missing/],
    ['a payload that is not JSON', { payload: { n: Number.NaN } }, /not a JSON number/],
  ])('throws on %s', (_name, over, message) => {
    const row = { ...ROW, ...over } as unknown as ChainRow
    expect(() => ledgerRowBytes(row)).toThrow(message)
    expect(() => ledgerLeafHash(row)).toThrow(message)
    expect(() => chainNext(CHAIN_GENESIS, row)).toThrow(message)
  })

  it('the content hash validates the same fields, position and tx_id included', () => {
    expect(() => ledgerContentHash({ ...ROW, position: '01' })).toThrow(/position/)
    expect(() => ledgerContentHash({ ...ROW, occurred_at: 'yesterday' })).toThrow(/occurred_at/)
  })

  it('accepts payloads of every JSON type, and the largest xid8', () => {
    for (const payload of [null, 0, 'text', [1, 'a'], {}, true]) {
      expect(() => ledgerRowBytes({ ...ROW, payload })).not.toThrow()
    }
    expect(() => ledgerRowBytes({ ...ROW, tx_id: '18446744073709551615' })).not.toThrow()
  })
})

describe('ledgerLeafHashAt', () => {
  it.each([
    ['the same place', '42', '1007'],
    ['another position', '7', '1007'],
    ['another tx_id', '42', '18446744073709551615'],
    ['both', '0', '3'],
  ])('at %s equals the leaf hash of the row moved there', (_name, position, txId) => {
    const row = { ...ROW, payload: { b: [1, { z: null, a: 'é' }], a: 2 } }
    expect(ledgerLeafHashAt(row)(position, txId)).toEqual(
      ledgerLeafHash({ ...row, position, tx_id: txId }),
    )
  })

  it('validates the row up front and each place it is asked about', () => {
    expect(() => ledgerLeafHashAt({ ...ROW, kind: 7 } as unknown as ChainRow)).toThrow(/kind/)
    const at = ledgerLeafHashAt(ROW)
    expect(() => at('01', '1')).toThrow(/position/)
    expect(() => at('1', '-1')).toThrow(/tx_id/)
  })
})
