import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CHAIN_ROW_COLUMNS,
  consistencyProofFromTiles,
  generateLedgerSigningKey,
  inclusionProofFromTiles,
  ledgerRowBytes,
  ledgerSeal,
  ledgerTreeVerify,
  ledgerVerifierKey,
  parseLedgerPublicKey,
  merkleRoot,
  openCheckpoint,
  ed25519NoteVerifier,
  parseLedgerSigningKey,
  tilePath,
  treeRootFromTiles,
  verifyConsistency,
  verifyInclusion,
  TreeInconsistentError,
  type ChainRow,
  type TileReader,
} from '@hookledger/ledger'
import { bypassLedgerGuards, rollLedgerBack, sealEverything, syntheticLedgerHistory, testApi, testDatabase, type TestDatabase } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}

/**
 * The ledger as one growing RFC 6962 tree, served as C2SP tiles: every checkpoint's note signs
 * the root an independent computation gets from the rows, and the tiles served over HTTP give
 * that root, every inclusion proof and every consistency proof.
 */
describe('the transparency log: one tree over every sealed row', () => {
  let database: TestDatabase
  let api: ReturnType<typeof testApi>
  let rows: ChainRow[] = []
  let notes: { total: number; note: string }[] = []
  let origin = ''

  // As a verifier would: each tile fetched once over HTTP, then kept.
  const fetched = new Map<string, Uint8Array>()
  const httpReader: TileReader = async (tiles) =>
    Promise.all(
      tiles.map(async (t) => {
        const path = tilePath(t)
        const kept = fetched.get(path)
        if (kept) return kept
        const res = await api.app.request('/log/' + path)
        expect(res.status, path).toBe(200)
        const bytes = new Uint8Array(await res.arrayBuffer())
        fetched.set(path, bytes)
        return bytes
      }),
    )

  beforeAll(async () => {
    database = await testDatabase()
    api = testApi(database.db)
    await syntheticLedgerHistory(database.db, { deliveries: 70, endpoints: 3 })
    // One row per checkpoint (a seal goes on until it has caught up): every tree size from 1
    // to the whole ledger is a signed checkpoint, inside tiles and at their edges.
    // Other files' open transactions can hold the horizon back for a moment: seal until all is sealed.
    await sealEverything(database.db, key, () => new Date(), { maxRows: 1 })
    rows = (await sql<ChainRow>`select ${CHAIN_ROW_COLUMNS} from ledger order by ledger.tx_id, ledger.position`.execute(database.db)).rows
    notes = (
      await sql<{ total: string; tree_note: string }>`select total::text, tree_note from ledger_checkpoints order by seq`.execute(database.db)
    ).rows.map((r) => ({ total: Number(r.total), note: r.tree_note }))
    origin = (await sql<{ origin: string }>`select origin from ledger_log`.execute(database.db)).rows[0]!.origin
  })
  afterAll(() => database.close())

  const leafOf = (row: ChainRow) => sha256(Uint8Array.of(0), sha256(ledgerRowBytes(row)))

  it('seals more than 300 rows in many checkpoints', () => {
    expect(rows.length).toBeGreaterThan(300)
    expect(notes.map((n) => n.total)).toEqual(rows.map((_, i) => i + 1))
    expect(notes.at(-1)!.total).toBe(rows.length)
  })

  it("every checkpoint's note is a C2SP checkpoint signed under the log's origin, over the root of the rows so far", () => {
    const verifier = ed25519NoteVerifier(ledgerVerifierKey(origin, key.publicKey))
    const leaves = rows.map(leafOf)
    for (const { total, note } of notes) {
      const opened = openCheckpoint(note, [verifier])
      expect(opened.checkpoint.origin).toBe(origin)
      expect(Number(opened.checkpoint.size)).toBe(total)
      expect(Buffer.from(opened.checkpoint.root).toString('hex')).toBe(Buffer.from(merkleRoot(leaves.slice(0, total))).toString('hex'))
    }
  })

  it('GET /log/checkpoint serves the newest note as text, briefly cacheable', async () => {
    const res = await api.app.request('/log/checkpoint')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d$/)
    expect(await res.text()).toBe(notes.at(-1)!.note)
  })

  it('the tiles give the root of every checkpointed size', async () => {
    const leaves = rows.map(leafOf)
    for (const { total } of notes) {
      expect(Buffer.from(await treeRootFromTiles(total, httpReader)).toString('hex')).toBe(Buffer.from(merkleRoot(leaves.slice(0, total))).toString('hex'))
    }
  })

  it('the tiles prove every row into the newest tree, and every checkpointed tree into the next and the newest', async () => {
    const leaves = rows.map(leafOf)
    const size = rows.length
    const root = merkleRoot(leaves)
    for (let i = 0; i < size; i++) {
      expect(verifyInclusion(leaves[i]!, i, size, await inclusionProofFromTiles(i, size, httpReader), root), `row ${i}`).toBe(true)
    }
    const sizes = [...new Set(notes.map((n) => n.total))]
    const roots = new Map(sizes.map((m) => [m, merkleRoot(leaves.slice(0, m))]))
    // What a witness is shown (each checkpoint to the next) and what verify proves (each to the newest).
    const pairs = [...sizes.slice(1).map((n, i) => [sizes[i]!, n] as const), ...sizes.map((m) => [m, size] as const)]
    for (const [m, n] of pairs) {
      const proof = await consistencyProofFromTiles(m, n, httpReader)
      expect(verifyConsistency(m, n, proof, roots.get(m)!, roots.get(n)!), `${m} → ${n}`).toBe(true)
    }
  }, 60_000)

  it('entry bundles hold each row’s commitment, length-prefixed, and never the row', async () => {
    const res = await api.app.request('/log/tile/entries/000')
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toContain('immutable')
    const bundle = new Uint8Array(await res.arrayBuffer())
    expect(bundle.length).toBe(256 * 34)
    for (let i = 0; i < 256; i++) {
      expect(bundle[i * 34]).toBe(0)
      expect(bundle[i * 34 + 1]).toBe(32)
      expect(Buffer.from(bundle.subarray(i * 34 + 2, i * 34 + 34)).toString('hex')).toBe(Buffer.from(sha256(ledgerRowBytes(rows[i]!))).toString('hex'))
    }
  })

  it('answers 404 for a tile the tree has not reached and for what is not a tile path', async () => {
    const partial = rows.length % 256
    expect((await api.app.request(`/log/tile/0/001.p/${partial + 1}`)).status).toBe(404)
    expect((await api.app.request('/log/tile/0/999')).status).toBe(404)
    expect((await api.app.request('/log/tile/0/1')).status).toBe(404)
    expect((await api.app.request('/log/tile/0/000.p/0')).status).toBe(404)
    expect((await api.app.request(`/log/tile/0/001.p/${partial}`)).status).toBe(200)
  })

  it('tiles only grow: rewriting, deleting or emptying one is refused, even to a superuser', async () => {
    await expect(sql`update ledger_tree_tiles set hashes = substring(hashes from 33) where level = 0 and index = 0`.execute(database.db)).rejects.toThrow(/only grow/)
    await expect(sql`delete from ledger_tree_tiles where level = -1`.execute(database.db)).rejects.toThrow(/only grow/)
    await expect(sql`truncate ledger_tree_tiles`.execute(database.db)).rejects.toThrow(/append-only/)
  })

  it('the sealer refuses to extend a tree whose stored edge is not the one its last note signed', async () => {
    const latest = sql`(select max(seq) from ledger_checkpoints)`
    const { tree_edge } = (await sql<{ tree_edge: Buffer }>`select tree_edge from ledger_checkpoints where seq = ${latest}`.execute(database.db)).rows[0]!
    const forged = Buffer.from(tree_edge)
    forged[0] = forged[0]! ^ 1
    await bypassLedgerGuards(database.db, (trx) => sql`update ledger_checkpoints set tree_edge = ${forged} where seq = ${latest}`.execute(trx))
    try {
      await expect(ledgerSeal(database.db, { key, now: new Date(), force: true })).rejects.toBeInstanceOf(TreeInconsistentError)
    } finally {
      await bypassLedgerGuards(database.db, (trx) => sql`update ledger_checkpoints set tree_edge = ${tree_edge} where seq = ${latest}`.execute(trx))
    }
    expect((await ledgerSeal(database.db, { key, now: new Date(), force: true })).checkpoints).toHaveLength(1)
  })

  it('ledger verify\'s tree pass: intact, every leaf checked against its row, every checkpoint a prefix', async () => {
    const report = await ledgerTreeVerify(database.db, { publicKey: parseLedgerPublicKey(key.publicKey), full: true, since: notes[3]!.note })
    expect(report.problems).toEqual([])
    expect(report).toMatchObject({ ok: true, origin, size: rows.length, leavesChecked: rows.length })
    expect(report.checkpointsProven).toBeGreaterThanOrEqual(notes.length)
  })

  it('a changed entry, leaf hash or upper hash is named', async () => {
    const flip = (level: number, index: number) =>
      bypassLedgerGuards(database.db, (trx) => sql`update ledger_tree_tiles set hashes = set_byte(hashes, 0, get_byte(hashes, 0) # 1) where level = ${level} and index = ${index}`.execute(trx))
    for (const [level, index, kind] of [[-1, 0, 'row_commitment'], [0, 1, 'tile_hash'], [1, 0, 'tile_hash']] as const) {
      await flip(level, index)
      const report = await ledgerTreeVerify(database.db, { publicKey: parseLedgerPublicKey(key.publicKey), full: true })
      await flip(level, index)
      expect(report.ok, `tile ${level}/${index}`).toBe(false)
      expect(report.problems.map((p) => p.kind)).toContain(kind)
    }
    expect((await ledgerTreeVerify(database.db, { publicKey: parseLedgerPublicKey(key.publicKey), full: true })).ok).toBe(true)
  })

  it('rolling back the newest checkpoints, their rows and tiles, and re-signing, passes alone but fails against a saved checkpoint', async () => {
    const saved = (await sql<{ tree_note: string; total: string }>`select tree_note, total::text from ledger_checkpoints order by seq desc limit 1`.execute(database.db)).rows[0]!
    const keep = notes[notes.length - 3]!.total
    expect(await rollLedgerBack(database.db, keep)).toBe(keep)
    await bypassLedgerGuards(database.db, (trx) =>
      sql`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (now(), 'syn', 'endpoint.disabled', '{"forged":true}', 'operator')`.execute(trx),
    )
    await sealEverything(database.db, key, () => new Date())
    const alone = await ledgerTreeVerify(database.db, { publicKey: parseLedgerPublicKey(key.publicKey), full: true })
    expect(alone.problems.slice(0, 3)).toEqual([])
    const against = await ledgerTreeVerify(database.db, { publicKey: parseLedgerPublicKey(key.publicKey), since: saved.tree_note })
    expect(against.ok).toBe(false)
    expect(against.problems.map((p) => p.kind)).toContain(Number(saved.total) > keep + 1 ? 'rolled_back' : 'rewritten')
  })
})
