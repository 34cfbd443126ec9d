import { describe, expect, it } from 'vitest'
import {
  type ChainVerification,
  LedgerChainVerifier,
  type LedgerChainVerifierOptions,
  type SealedLeaves,
} from './ledger-chain-verifier.js'
import {
  CHECKPOINT_GENESIS_HASH,
  checkpointHash,
  type LedgerCheckpoint,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  type LedgerSigningKey,
  signCheckpoint,
} from './ledger-checkpoint.js'
import { signKeyRotation, verifiedHandOvers } from './ledger-key-rotation.js'
import { CHAIN_GENESIS, chainNext, type ChainRow, ledgerLeafHash } from './ledger-row-encoding.js'
import { merkleRoot } from './merkle-tree.js'

const KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 11).toString('base64url')}`)
const PUBLIC = parseLedgerPublicKey(KEY.publicKey)
const OTHER_KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 12).toString('base64url')}`)

interface Sealed {
  cp: LedgerCheckpoint
  leaves: SealedLeaves
}
type Fields = Omit<LedgerCheckpoint, 'signature' | 'key_id'>

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const ref = (row: ChainRow) => ({ tx_id: row.tx_id, position: row.position })
const chainKey = (row: ChainRow) => [BigInt(row.tx_id), BigInt(row.position)] as const
const byChainKey = (a: ChainRow, b: ChainRow) => {
  const [ta, pa] = chainKey(a)
  const [tb, pb] = chainKey(b)
  return ta !== tb ? (ta < tb ? -1 : 1) : pa < pb ? -1 : pa > pb ? 1 : 0
}

function row(position: number, tx: number): ChainRow {
  return {
    position: String(position),
    tx_id: String(tx),
    occurred_at: new Date(Date.UTC(2026, 11, 1, 9) + position * 1000).toISOString().replace('Z', '000Z'),
    owner_id: 'own_1',
    kind: 'delivery.attempted',
    endpoint_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    delivery_id: `d-${Math.ceil(position / 3)}`,
    event_id: 'evt_1',
    payload: { attempt: position, status_code: 503, outcome: 'http_error' },
    actor: 'worker:w1',
  }
}

/**
 * 14 rows in chain order ((tx_id, position)): position 5 was written by an older transaction
 * than position 4, so chain order is not position order. Checkpoints of 4, 5, 0 and 3 rows;
 * the last two rows are unsealed.
 */
const ROWS: readonly ChainRow[] = [
  row(1, 700), row(2, 700), row(3, 701), row(5, 702),
  row(4, 703), row(6, 703), row(7, 704), row(8, 705), row(9, 705),
  row(10, 706), row(12, 706), row(11, 707),
  row(13, 708), row(14, 709),
]
const SIZES = [4, 5, 0, 3]

/** What the database side's sealer does, written out plainly; `tweak` plays a faulty one. */
function seal(rows: readonly ChainRow[], sizes: readonly number[], tweak?: (fields: Fields) => Fields, keyOf: (seq: number) => LedgerSigningKey = () => KEY): Sealed[] {
  const sealed: Sealed[] = []
  let head = CHAIN_GENESIS
  let prev = CHECKPOINT_GENESIS_HASH
  let total = 0
  let last: Fields['last'] = null
  let offset = 0
  sizes.forEach((size, i) => {
    const group = rows.slice(offset, offset + size)
    offset += size
    for (const r of group) head = chainNext(head, r)
    const hashes = group.map(ledgerLeafHash)
    total += size
    if (group.length > 0) last = ref(group[group.length - 1] as ChainRow)
    const fields: Fields = {
      seq: i + 1,
      first: group.length > 0 ? ref(group[0] as ChainRow) : null,
      last,
      count: size,
      total,
      chain_hash: hex(head),
      merkle_root: hex(merkleRoot(hashes)),
      prev_checkpoint_hash: prev,
      created_at: `2026-12-01T10:0${i}:00.000Z`,
    }
    const cp = signCheckpoint(keyOf(i + 1), tweak?.(fields) ?? fields)
    prev = checkpointHash(cp)
    sealed.push({ cp, leaves: { positions: group.map((r) => r.position), hashes } })
  })
  return sealed
}

const SEALED = seal(ROWS, SIZES)

/** Pushes as the database side does: rows sorted by chain key, split by each checkpoint's last. */
function verifyLikeDatabase(
  rows: readonly ChainRow[],
  sealed: readonly Sealed[] = SEALED,
  options: Omit<Partial<LedgerChainVerifierOptions>, 'publicKey'> & { publicKey?: Uint8Array } = {},
): ChainVerification {
  const verifier = new LedgerChainVerifier({ publicKey: PUBLIC, ...options })
  const ordered = [...rows].sort(byChainKey)
  let i = 0
  for (const { cp, leaves } of sealed) {
    verifier.pushCheckpoint(cp, leaves)
    const last = cp.last
    while (i < ordered.length && last !== null && byChainKey(ordered[i] as ChainRow, last as ChainRow) <= 0) {
      verifier.pushRow(ordered[i++] as ChainRow)
    }
  }
  while (i < ordered.length) verifier.pushRow(ordered[i++] as ChainRow)
  return verifier.finish()
}

/** Pushes exactly this sequence, as a reader of an export file does. */
function verifySequence(items: readonly (Sealed | ChainRow)[]): ChainVerification {
  const verifier = new LedgerChainVerifier({ publicKey: PUBLIC })
  for (const item of items) {
    if ('cp' in item) verifier.pushCheckpoint(item.cp, item.leaves)
    else verifier.pushRow(item)
  }
  return verifier.finish()
}

/** The export order of the clean ledger: each checkpoint followed by its rows. */
function exportSequence(rows: readonly ChainRow[] = ROWS): (Sealed | ChainRow)[] {
  const items: (Sealed | ChainRow)[] = []
  let offset = 0
  SEALED.forEach((sealed, i) => {
    items.push(sealed, ...rows.slice(offset, offset + (SIZES[i] as number)))
    offset += SIZES[i] as number
  })
  return [...items, ...rows.slice(offset)]
}

const findings = (result: ChainVerification) =>
  result.problems.map((p) => [p.kind, p.position, p.checkpoint] as const)

const change = (rows: readonly ChainRow[], position: number, over: (r: ChainRow) => Partial<ChainRow>) =>
  rows.map((r) => (r.position === String(position) ? { ...r, ...over(r) } : r))
const without = (rows: readonly ChainRow[], position: number) =>
  rows.filter((r) => r.position !== String(position))
/** Exchanges everything but position and tx_id: what UPDATEs of two rows' columns can do. */
const swapContents = (rows: readonly ChainRow[], p: number, q: number) => {
  const a = rows.find((r) => r.position === String(p)) as ChainRow
  const b = rows.find((r) => r.position === String(q)) as ChainRow
  return rows.map((r) => (r === a ? { ...b, ...ref(a) } : r === b ? { ...a, ...ref(b) } : r))
}

describe('LedgerChainVerifier: a clean ledger', () => {
  it('passes, with its counts', () => {
    expect(verifyLikeDatabase(ROWS)).toEqual({
      ok: true,
      rows: 14,
      sealedRows: 12,
      unsealedRows: 2,
      checkpoints: 4,
      headerOnly: 0,
      problems: [],
      problemsOmitted: 0,
      firstBadPosition: null,
    })
  })

  it('passes in export order too', () => {
    expect(verifySequence(exportSequence())).toMatchObject({ ok: true, rows: 14, sealedRows: 12 })
  })

  it.each<[string, readonly ChainRow[], readonly number[], Partial<ChainVerification>]>([
    ['an empty ledger with one checkpoint', [], [0], { rows: 0, checkpoints: 1 }],
    ['rows and no checkpoint yet: all unsealed', ROWS, [], { rows: 14, unsealedRows: 14, checkpoints: 0 }],
    ['every row sealed', ROWS, [4, 5, 0, 3, 2], { sealedRows: 14, unsealedRows: 0 }],
    ['one big checkpoint', ROWS, [14], { sealedRows: 14, checkpoints: 1 }],
  ])('passes: %s', (_name, rows, sizes, counts) => {
    expect(verifyLikeDatabase(rows, seal(rows, sizes))).toMatchObject({ ok: true, problems: [], ...counts })
  })

  it('a row appended after the last checkpoint is only counted (nothing sealed it yet)', () => {
    const result = verifyLikeDatabase([...ROWS, row(15, 710)])
    expect(result).toMatchObject({ ok: true, unsealedRows: 3 })
  })
})

describe('LedgerChainVerifier: rows tampered with in the database', () => {
  it.each<[string, readonly ChainRow[], (readonly [string, string | null, number | null])[]]>([
    [
      'a payload value changed (status_code 503 → 200)',
      change(ROWS, 7, (r) => ({ payload: { ...(r.payload as object), status_code: 200 } })),
      [['row_changed', '7', 2]],
    ],
    ['occurred_at moved by a microsecond', change(ROWS, 3, () => ({ occurred_at: '2026-12-01T09:00:03.000001Z' })), [['row_changed', '3', 1]]],
    ['a row deleted', without(ROWS, 6), [['row_missing', '6', 2]]],
    ["a row inserted inside a checkpoint's range", [...ROWS, row(15, 704)], [['row_inserted', '15', 2]]],
    ['a row inserted before everything', [...ROWS, row(15, 1)], [['row_inserted', '15', 1]]],
    ["two rows' contents swapped", swapContents(ROWS, 7, 8), [['order_changed', '7', 2], ['order_changed', '8', 2]]],
    ['a row moved to a new position', change(ROWS, 6, () => ({ position: '16' })), [['order_changed', '16', 2]]],
    ["a row's tx_id changed to its neighbour's", change(ROWS, 8, () => ({ tx_id: '704' })), [['order_changed', '8', 2]]],
    [
      "two rows' tx_ids swapped",
      change(change(ROWS, 1, () => ({ tx_id: '702' })), 5, () => ({ tx_id: '700' })),
      [['order_changed', '1', 1], ['order_changed', '5', 1]],
    ],
    [
      "a row's tx_id raised into a later checkpoint's range",
      change(ROWS, 3, () => ({ tx_id: '706' })),
      [['row_missing', '3', 1], ['row_inserted', '3', 4]],
    ],
    ["a row's tx_id raised past the last checkpoint", change(ROWS, 3, () => ({ tx_id: '800' })), [['row_missing', '3', 1]]],
    [
      'contents swapped across two checkpoints (each sees a changed row)',
      swapContents(ROWS, 3, 7),
      [['row_changed', '3', 1], ['row_changed', '7', 2]],
    ],
    [
      'a row that no longer fits the encoding',
      change(ROWS, 7, () => ({ occurred_at: '2026-12-01 09:00:07' })),
      [['row_changed', '7', 2]],
    ],
    ['a row duplicated', [...ROWS, row(7, 704)], [['row_inserted', '7', 2]]],
    [
      'a forged copy next to the genuine row (the sealed one keeps the position)',
      [...ROWS, { ...row(7, 704), actor: 'forger' }].sort((a, b) => (a.actor === 'forger' ? -1 : b.actor === 'forger' ? 1 : 0)),
      [['row_inserted', '7', 2]],
    ],
    [
      'changes in two checkpoints: each reported once, no chain_mismatch downstream',
      change(change(ROWS, 2, () => ({ actor: 'operator' })), 11, () => ({ kind: 'delivery.completed' })),
      [['row_changed', '2', 1], ['row_changed', '11', 4]],
    ],
  ])('%s', (_name, rows, expected) => {
    const result = verifyLikeDatabase(rows)
    expect(findings(result)).toEqual(expected)
    expect(result.ok).toBe(false)
    expect(result.firstBadPosition).toBe(
      expected.map(([, p]) => p).filter((p) => p !== null).sort((a, b) => Number(a) - Number(b))[0],
    )
  })

  it('says what it found, in words', () => {
    const details = (rows: readonly ChainRow[]) => verifyLikeDatabase(rows).problems.map((p) => p.detail)
    expect(details(swapContents(ROWS, 7, 8))).toEqual([
      'holds the row sealed at position 8',
      'holds the row sealed at position 7',
    ])
    expect(details(change(ROWS, 8, () => ({ tx_id: '704' })))).toEqual([
      'the row sealed here with tx_id 705 now has tx_id 704, which moves it in the chain order',
    ])
    expect(details(without(ROWS, 6))).toEqual(['sealed by checkpoint 2, but absent'])
    expect(details(change(ROWS, 7, () => ({ occurred_at: 'x' })))[0]).toMatch(/^cannot be encoded: .*occurred_at/)
  })
})

describe('LedgerChainVerifier: checkpoints tampered with', () => {
  const replace = (i: number, sealed: Partial<Sealed>) => SEALED.map((s, j) => (j === i ? { ...s, ...sealed } : s))
  const cp2 = SEALED[1] as Sealed

  it.each<[string, readonly Sealed[], (readonly [string, string | null, number | null])[]]>([
    [
      'a checkpoint edited after signing (its hash changes, so the next link breaks too)',
      replace(1, { cp: { ...cp2.cp, created_at: '2026-12-01T10:01:00.001Z' } }),
      [['checkpoint_signature_bad', null, 2], ['checkpoint_sequence_broken', null, 3]],
    ],
    [
      'a checkpoint re-signed by another key',
      replace(1, { cp: signCheckpoint(OTHER_KEY, cp2.cp) }),
      [['checkpoint_signature_bad', null, 2], ['checkpoint_sequence_broken', null, 3]],
    ],
    [
      'a checkpoint removed (its rows now fall in the next one)',
      SEALED.filter((_, i) => i !== 1),
      [
        ['checkpoint_sequence_broken', null, 3],
        ['row_inserted', '4', 3], ['row_inserted', '6', 3], ['row_inserted', '7', 3],
        ['row_inserted', '8', 3], ['row_inserted', '9', 3],
      ],
    ],
    [
      'a sealed leaf hash replaced',
      replace(1, { leaves: { ...cp2.leaves, hashes: cp2.leaves.hashes.map((h, i) => (i === 2 ? new Uint8Array(32) : h)) } }),
      [['checkpoint_altered', null, 2], ['row_changed', '7', 2]],
    ],
    [
      'sealed leaves reordered',
      replace(1, {
        leaves: {
          positions: ['6', '4', ...cp2.leaves.positions.slice(2)],
          hashes: [cp2.leaves.hashes[1], cp2.leaves.hashes[0], ...cp2.leaves.hashes.slice(2)] as Uint8Array[],
        },
      }),
      [['checkpoint_altered', null, 2], ['order_changed', '4', 2]],
    ],
    ['a sealed leaf dropped', replace(1, { leaves: { positions: cp2.leaves.positions.slice(1), hashes: cp2.leaves.hashes.slice(1) } }), [['checkpoint_altered', null, 2], ['row_inserted', '4', 2]]],
    ['leaves that are not arrays', replace(1, { leaves: {} as SealedLeaves }), [
      ['checkpoint_altered', null, 2],
      ['row_inserted', '4', 2], ['row_inserted', '6', 2], ['row_inserted', '7', 2], ['row_inserted', '8', 2], ['row_inserted', '9', 2],
    ]],
  ])('%s', (_name, sealed, expected) => {
    expect(findings(verifyLikeDatabase(ROWS, sealed))).toEqual(expected)
  })

  // A faulty (or forging, key-holding) sealer: everything signed and linked, something wrong.
  it.each<[string, (f: Fields) => Fields, (readonly [string, string | null, number | null])[], RegExp]>([
    ['seq renumbered', (f) => (f.seq === 2 ? { ...f, seq: 7 } : f), [['checkpoint_sequence_broken', null, 7], ['checkpoint_sequence_broken', null, 3]], /seq 7 follows seq 1/],
    ['the first checkpoint not numbered 1', (f) => ({ ...f, seq: f.seq + 1 }), [['checkpoint_sequence_broken', null, 2]], /first checkpoint has seq 2/],
    ['a count that disagrees with the leaves', (f) => (f.seq === 2 ? { ...f, count: 6 } : f), [['checkpoint_altered', null, 2]], /count 6, but 5 sealed leaves; total 9 is not 4 \+ count 6/],
    ['a total that does not add up', (f) => (f.seq === 4 ? { ...f, total: 13 } : f), [['checkpoint_altered', null, 4]], /total 13 is not 9 \+ count 3/],
    ['a forged merkle root', (f) => (f.seq === 1 ? { ...f, merkle_root: 'e'.repeat(64) } : f), [['checkpoint_altered', null, 1]], /hash to root [0-9a-f]{64}, the checkpoint says e{64}/],
    ['first naming another position', (f) => (f.seq === 1 ? { ...f, first: { tx_id: '700', position: '2' } } : f), [['checkpoint_altered', null, 1]], /first is not the first sealed row \(position 1\)/],
    ['first naming another tx_id', (f) => (f.seq === 1 ? { ...f, first: { tx_id: '699', position: '1' } } : f), [['checkpoint_altered', null, 1]], /first names tx_id 699, the sealed row at position 1 has tx_id 700/],
    ['an empty checkpoint that does not carry last over', (f) => (f.seq === 3 ? { ...f, last: { tx_id: '703', position: '6' } } : f), [['checkpoint_altered', null, 3]], /last is not carried over/],
    [
      'a wrong chain_hash (the next checkpoint, built on the right one, no longer links either)',
      (f) => (f.seq === 2 ? { ...f, chain_hash: 'f'.repeat(64) } : f),
      [['chain_mismatch', null, 2], ['chain_mismatch', null, 3]],
      /the rows chain to [0-9a-f]{64}, the checkpoint says f{64}/,
    ],
    ['a prev_checkpoint_hash that does not link', (f) => (f.seq === 4 ? { ...f, prev_checkpoint_hash: 'a'.repeat(64) } : f), [['checkpoint_sequence_broken', null, 4]], /not the hash of checkpoint 3/],
  ])('signed but wrong: %s', (_name, tweak, expected, detail) => {
    const result = verifyLikeDatabase(ROWS, seal(ROWS, SIZES, tweak))
    expect(findings(result)).toEqual(expected)
    expect(result.problems[0]?.detail).toMatch(detail)
  })

  it('names the key a foreign checkpoint claims', () => {
    const result = verifyLikeDatabase(ROWS, replace(1, { cp: signCheckpoint(OTHER_KEY, cp2.cp) }))
    expect(result.problems[0]?.detail).toBe(`signed as key ${OTHER_KEY.keyId}, not by the key verifying (${KEY.keyId})`)
  })

  it('a malformed checkpoint is reported, not thrown', () => {
    const broken = replace(0, { cp: { ...(SEALED[0] as Sealed).cp, chain_hash: 'nope' } })
    const result = verifyLikeDatabase(ROWS, broken)
    expect(findings(result)).toEqual([
      ['checkpoint_signature_bad', null, 1],
      ['checkpoint_altered', null, 1],
      ['chain_mismatch', null, 1],
    ])
    expect(result.problems[1]?.detail).toMatch(/malformed: checkpoint chain_hash/)
  })
})

describe('LedgerChainVerifier: an export file in the wrong order', () => {
  const items = exportSequence()
  const indexOfRow = (position: number) => items.findIndex((item) => 'position' in item && item.position === String(position))
  const moveItem = (from: number, to: number) => {
    const copy = [...items]
    const [item] = copy.splice(from, 1)
    copy.splice(to, 0, item as Sealed | ChainRow)
    return copy
  }

  it.each<[string, () => (Sealed | ChainRow)[], (readonly [string, string | null, number | null])[]]>([
    [
      'two rows swapped in the file',
      () => moveItem(indexOfRow(8), indexOfRow(7)),
      [['order_changed', '8', 2]],
    ],
    [
      'a row moved to a later position in its checkpoint',
      () => moveItem(indexOfRow(4), indexOfRow(9)),
      [['order_changed', '4', 2]],
    ],
    [
      "a row moved into the next checkpoint's section",
      () => moveItem(indexOfRow(3), indexOfRow(9)),
      [['row_missing', '3', 1], ['row_inserted', '3', 2]],
    ],
    [
      'a row before the first checkpoint',
      () => moveItem(indexOfRow(1), 0),
      [['order_changed', '1', null], ['row_missing', '1', 1]],
    ],
    [
      'an unsealed row before the last checkpoint',
      () => moveItem(indexOfRow(13), items.indexOf(SEALED[3] as Sealed)),
      [['order_changed', '13', 3]],
    ],
  ])('%s', (_name, build, expected) => {
    expect(findings(verifySequence(build()))).toEqual(expected)
  })

  it('counts rows that turned out not to be unsealed as sealed', () => {
    const result = verifySequence(moveItem(indexOfRow(13), items.indexOf(SEALED[3] as Sealed)))
    expect(result).toMatchObject({ rows: 14, sealedRows: 13, unsealedRows: 1 })
  })
})

describe('LedgerChainVerifier: limits and contract', () => {
  const rewritten = ROWS.map((r) => ({ ...r, actor: 'forger' }))

  it('keeps maxProblems findings and counts the rest; firstBadPosition counts them all', () => {
    const few = verifyLikeDatabase(rewritten, SEALED, { maxProblems: 3 })
    expect(few).toMatchObject({ ok: false, problemsOmitted: 9, firstBadPosition: '1' })
    expect(findings(few)).toEqual([['row_changed', '1', 1], ['row_changed', '2', 1], ['row_changed', '3', 1]])
    const none = verifyLikeDatabase(rewritten, SEALED, { maxProblems: 0 })
    expect(none).toMatchObject({ ok: false, problems: [], problemsOmitted: 12, firstBadPosition: '1' })
  })

  it('defaults to 1000 findings', () => {
    const rows = Array.from({ length: 1100 }, (_, i) => row(i + 1, 1000 + i))
    const result = verifyLikeDatabase(rows.map((r) => ({ ...r, actor: 'forger' })), seal(rows, [1100]))
    expect(result.problems).toHaveLength(1000)
    expect(result.problemsOmitted).toBe(100)
  })

  it('a wholesale rewrite of a large checkpoint stays fast: rows are reported as changed', () => {
    const rows = Array.from({ length: 600 }, (_, i) => row(i + 1, 1000 + Math.floor(i / 3)))
    const started = performance.now()
    const result = verifyLikeDatabase(rows.map((r) => ({ ...r, owner_id: 'own_2' })), seal(rows, [600]))
    expect(performance.now() - started).toBeLessThan(3000)
    expect(result.problems).toHaveLength(600)
    expect(result.problems.every((p) => p.kind === 'row_changed')).toBe(true)
    expect(result.problems[0]?.detail).toMatch(/too many differing rows/)
  })

  it('finds two swapped rows inside a large checkpoint', () => {
    const rows = Array.from({ length: 500 }, (_, i) => row(i + 1, 1000 + i))
    expect(findings(verifyLikeDatabase(swapContents(rows, 17, 401), seal(rows, [500])))).toEqual([
      ['order_changed', '17', 1],
      ['order_changed', '401', 1],
    ])
  })

  it('a row that is not even an object is a finding; a checkpoint that is not one throws', () => {
    const verifier = new LedgerChainVerifier({ publicKey: PUBLIC })
    verifier.pushCheckpoint((SEALED[0] as Sealed).cp, (SEALED[0] as Sealed).leaves)
    verifier.pushRow(null as unknown as ChainRow)
    expect(() => verifier.pushCheckpoint(null as unknown as LedgerCheckpoint, { positions: [], hashes: [] })).toThrow(/must be an object/)
    expect(verifier.finish().problems).toContainEqual({
      kind: 'row_changed',
      position: null,
      checkpoint: 1,
      detail: 'cannot be encoded: ledger row must be an object',
    })
  })

  it('finish is idempotent; pushing after it throws', () => {
    const verifier = new LedgerChainVerifier({ publicKey: PUBLIC })
    verifier.pushCheckpoint((SEALED[0] as Sealed).cp, (SEALED[0] as Sealed).leaves)
    const result = verifier.finish()
    expect(verifier.finish()).toBe(result)
    expect(() => verifier.pushRow(ROWS[0] as ChainRow)).toThrow(/finished/)
    expect(() => verifier.pushCheckpoint((SEALED[1] as Sealed).cp, (SEALED[1] as Sealed).leaves)).toThrow(/finished/)
  })

  it.each([
    ['a 31-byte public key', { publicKey: PUBLIC.subarray(1) }, /32 raw bytes/],
    ['a public key as text', { publicKey: KEY.publicKey as unknown as Uint8Array }, /32 raw bytes/],
    ['a negative maxProblems', { publicKey: PUBLIC, maxProblems: -1 }, /maxProblems/],
  ])('refuses %s', (_name, options, message) => {
    expect(() => new LedgerChainVerifier(options)).toThrow(message)
  })
})

describe('an export that starts after the beginning (pushAnchor)', () => {
  const sealed = seal(ROWS, SIZES)
  const from = (anchor: LedgerCheckpoint) => {
    const v = new LedgerChainVerifier({ publicKey: PUBLIC })
    v.pushAnchor(anchor)
    let offset = SIZES[0]!
    for (const [i, s] of sealed.slice(1).entries()) {
      v.pushCheckpoint(s.cp, s.leaves)
      for (const r of ROWS.slice(offset, offset + SIZES[i + 1]!)) v.pushRow(r)
      offset += SIZES[i + 1]!
    }
    for (const r of ROWS.slice(offset)) v.pushRow(r)
    return v.finish()
  }
  it('resumes the chain and the sequence from the anchor checkpoint', () => {
    expect(from(sealed[0]!.cp)).toMatchObject({ ok: true, problems: [], checkpoints: 3, unsealedRows: 2 })
  })
  it('a forged anchor fails its signature; a stale one breaks the sequence', () => {
    const forged = { ...sealed[0]!.cp, chain_hash: '0'.repeat(64) }
    expect(from(forged).problems.map((p) => p.kind)).toContain('checkpoint_signature_bad')
    expect(from(sealed[1]!.cp).problems.map((p) => p.kind)).toContain('checkpoint_sequence_broken')
  })
  it('must come first', () => {
    const v = new LedgerChainVerifier({ publicKey: PUBLIC })
    v.pushCheckpoint(sealed[0]!.cp, sealed[0]!.leaves)
    expect(() => v.pushAnchor(sealed[0]!.cp)).toThrow(/first/)
  })
})

describe('LedgerChainVerifier: checkpoints checked as headers only (archived, or before a snapshot)', () => {
  /** The first `n` checkpoints as headers, then the rest with the rows past the n-th's last. */
  function verifyAfter(n: number, sealed: readonly Sealed[] = SEALED, rows: readonly ChainRow[] = ROWS): ChainVerification {
    const verifier = new LedgerChainVerifier({ publicKey: PUBLIC })
    for (const { cp } of sealed.slice(0, n)) verifier.pushHeader(cp)
    const anchor = sealed[n - 1]!.cp.last as ChainRow
    const ordered = [...rows].sort(byChainKey).filter((r) => byChainKey(r, anchor) > 0)
    let i = 0
    for (const { cp, leaves } of sealed.slice(n)) {
      verifier.pushCheckpoint(cp, leaves)
      while (i < ordered.length && cp.last !== null && byChainKey(ordered[i]!, cp.last as ChainRow) <= 0) verifier.pushRow(ordered[i++]!)
    }
    while (i < ordered.length) verifier.pushRow(ordered[i++]!)
    return verifier.finish()
  }

  it('resume the chain from the last header: the later rows verify, and the earlier ones are not needed', () => {
    expect(verifyAfter(2)).toMatchObject({ ok: true, checkpoints: 4, headerOnly: 2, rows: 5, sealedRows: 3, unsealedRows: 2 })
    expect(verifyAfter(4)).toMatchObject({ ok: true, headerOnly: 4, rows: 2, unsealedRows: 2 })
  })

  it.each([
    ['a header re-signed by another key', (s: Sealed[]) => [{ ...s[0]!, cp: signCheckpoint(OTHER_KEY, s[0]!.cp) }, ...s.slice(1)], 'checkpoint_signature_bad', 1],
    ['a header left out', (s: Sealed[]) => [s[0]!, ...s.slice(2)], 'checkpoint_sequence_broken', 3],
    ['a header whose total does not add up', (s: Sealed[]) => [{ ...s[0]!, cp: signCheckpoint(KEY, { ...s[0]!.cp, total: 99 }) }, ...s.slice(1)], 'checkpoint_altered', 1],
  ] as const)('still name %s', (_name, forge, kind, checkpoint) => {
    const result = verifyAfter(2, forge([...SEALED]))
    expect(result.ok).toBe(false)
    expect(result.problems.map((p) => [p.kind, p.checkpoint])).toContainEqual([kind, checkpoint])
  })

  it('a row changed after the last header is named as before', () => {
    expect(findings(verifyAfter(2, SEALED, change(ROWS, 11, () => ({ actor: 'forger' }))))).toEqual([['row_changed', '11', 4]])
  })

  it('come before every checkpoint pushed with its rows', () => {
    const verifier = new LedgerChainVerifier({ publicKey: PUBLIC })
    verifier.pushCheckpoint(SEALED[0]!.cp, SEALED[0]!.leaves)
    expect(() => verifier.pushHeader(SEALED[1]!.cp)).toThrow('headers come before every checkpoint pushed with its rows')
  })
})

describe('LedgerChainVerifier: checkpoints across a key rotation', () => {
  const NEXT_KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 13).toString('base64url')}`)
  const LATER_KEY = parseLedgerSigningKey(`hlsk_${Buffer.alloc(32, 14).toString('base64url')}`)
  const handOvers = (...records: ReturnType<typeof signKeyRotation>[]) => verifiedHandOvers(records).handOvers
  const TO_NEXT = handOvers(signKeyRotation(KEY, NEXT_KEY, new Date('2026-12-01T10:01:30.000Z')))
  const keys = (...byCheckpoint: LedgerSigningKey[]) => (seq: number) => byCheckpoint[seq - 1] as LedgerSigningKey

  it.each<[string, (seq: number) => LedgerSigningKey, Partial<LedgerChainVerifierOptions>, (readonly [string, string | null, number | null])[]]>([
    ['the old key, then the one it handed over to: intact', keys(KEY, KEY, NEXT_KEY, NEXT_KEY), { handOvers: TO_NEXT }, []],
    ['every checkpoint by the successor: intact', keys(NEXT_KEY, NEXT_KEY, NEXT_KEY, NEXT_KEY), { handOvers: TO_NEXT }, []],
    ['the successor without the hand-over: its checkpoints are foreign', keys(KEY, KEY, NEXT_KEY, NEXT_KEY), {}, [['checkpoint_signature_bad', null, 3], ['checkpoint_signature_bad', null, 4]]],
    [
      'a chain of two hand-overs',
      keys(KEY, NEXT_KEY, LATER_KEY, LATER_KEY),
      { handOvers: handOvers(signKeyRotation(KEY, NEXT_KEY, new Date()), signKeyRotation(NEXT_KEY, LATER_KEY, new Date())) },
      [],
    ],
    ['the old key signing again after its successor did: refused', keys(KEY, NEXT_KEY, KEY, NEXT_KEY), { handOvers: TO_NEXT }, [['checkpoint_signature_bad', null, 3]]],
    ['trusting the successor does not vouch for the old key (trust flows forward)', keys(KEY, KEY, NEXT_KEY, NEXT_KEY), { handOvers: TO_NEXT, publicKey: parseLedgerPublicKey(NEXT_KEY.publicKey) }, [['checkpoint_signature_bad', null, 1], ['checkpoint_signature_bad', null, 2]]],
    [
      'a hand-over from a key nobody trusts passes nothing on',
      keys(KEY, KEY, LATER_KEY, LATER_KEY),
      { handOvers: handOvers(signKeyRotation(OTHER_KEY, LATER_KEY, new Date())) },
      [['checkpoint_signature_bad', null, 3], ['checkpoint_signature_bad', null, 4]],
    ],
  ])('%s', (_name, keyOf, options, expected) => {
    expect(findings(verifyLikeDatabase(ROWS, seal(ROWS, SIZES, undefined, keyOf), options))).toEqual(expected)
  })

  it('says why a checkpoint of a retired key is refused', () => {
    const result = verifyLikeDatabase(ROWS, seal(ROWS, SIZES, undefined, keys(KEY, NEXT_KEY, KEY, NEXT_KEY)), { handOvers: TO_NEXT })
    expect(result.problems[0]?.detail).toBe(`signed by key ${KEY.keyId} after it had handed over (a checkpoint before this one was signed by its successor)`)
  })

  it('names the key verifying when a checkpoint\'s key is none it leads to', () => {
    const result = verifyLikeDatabase(ROWS, seal(ROWS, SIZES, undefined, keys(KEY, KEY, OTHER_KEY, KEY)), { handOvers: TO_NEXT })
    expect(result.problems[0]?.detail).toBe(`signed as key ${OTHER_KEY.keyId}, neither the key verifying (${KEY.keyId}) nor one it handed over to`)
  })
})
