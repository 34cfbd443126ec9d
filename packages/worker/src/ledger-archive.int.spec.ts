import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  generateLedgerSigningKey,
  LedgerExportVerifier,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  ArchiveError,
  ledgerArchive,
  ledgerChainVerify,
  ledgerExport,
  ledgerFileLines,
  ledgerPartitions,
  ledgerPartitionsAhead,
  ledgerReplayVerify,
  ledgerTreeVerify,
  ledgerReceipt,
  verifyLedgerReceipt,
  databaseTileReader,
  inclusionProofFromTiles,
  consistencyProofFromTiles,
  treeRootFromTiles,
  verifyConsistency,
  verifyInclusion,
  latestTreeNote,
  openCheckpoint,
  ed25519NoteVerifier,
  ledgerVerifierKey,
  ReplayStartError,
  type LedgerExportLine,
} from '@hookledger/ledger'
import { deliveryRetire } from '@hookledger/store'
import { adminDbOf, engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

const verifyFile = async (file: string) => {
  const verifier = new LedgerExportVerifier({ publicKey })
  for await (const line of ledgerFileLines(file)) verifier.pushLine(line)
  return verifier.finish()
}

/**
 * `ledger archive --before <checkpoint>`: the range goes to a file that verifies with the public
 * key alone, the partitions holding only its rows leave, and `ledger verify` and replay stay
 * clean — from the snapshot, and across a second archive.
 */
describe('ledger archive', () => {
  let h: EngineHarness
  let dir: string
  let firstThrough = 0
  const latest = async () => Number((await sql<{ seq: string }>`select max(seq)::text as seq from ledger_checkpoints`.execute(h.db)).rows[0]!.seq)
  const rowsLeft = async () => Number((await sql<{ n: string }>`select count(*)::text as n from ledger`.execute(h.db)).rows[0]!.n)

  /** Completed, retried and failed deliveries, sealed in small checkpoints. */
  async function traffic(tag: string) {
    for (let i = 0; i < 6; i++) await h.publish({ id: `evt_${tag}_${i}` })
    h.receiver.enqueue({ status: 500 }, { status: 500 })
    await h.step()
    h.clock.advance(3_600_000)
    await h.step()
    await sealEverything(h.db, key, () => h.clock.now(), { maxRows: 12 })
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookledger-archive-'))
    h = await engineHarness()
    // Small partitions from the next position on, so a test's traffic spans several.
    const last = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).at(-1)!
    await sql`alter table ledger alter column position restart with ${sql.lit(Number(last.to))}`.execute(adminDbOf(h.db))
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 40, ahead: 40 })).toBeGreaterThan(30)
    await h.createEndpoint()
    await h.createEndpoint()
    await traffic('a')
    await traffic('b')
  })
  afterAll(async () => {
    await h?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('writes the checkpoints before --before to a file that verifies offline, and drops the partitions holding only their rows', async () => {
    const before = (await latest()) - 1
    const rows = await rowsLeft()
    const partitions = (await ledgerPartitions(h.db)).length
    const file = path.join(dir, 'first.jsonl')
    const result = await ledgerArchive(h.db, { beforeCheckpoint: before, file, key, now: () => h.clock.now(), actor: 'operator:test' })
    expect(result.archive).toMatchObject({ file: 'first.jsonl', first_checkpoint: 1, last_checkpoint: before - 1 })
    firstThrough = before - 1
    expect(result.dropped.partitions).toBeGreaterThan(1)
    expect(await rowsLeft()).toBeLessThan(rows)
    expect((await ledgerPartitions(h.db)).length).toBe(partitions - result.dropped.partitions)

    // Offline: the file alone, with the public key; one changed character fails it.
    const offline = await verifyFile(file)
    expect(offline).toMatchObject({ ok: true, malformed: [], unsealedRows: 0 })
    expect(offline.rows).toBe(result.archive.rows)
    const text = readFileSync(file, 'utf8')
    const forged = path.join(dir, 'forged.jsonl')
    writeFileSync(forged, text.replace('"status_code":500', '"status_code":200'))
    expect(await verifyFile(forged)).toMatchObject({ ok: false })
    // The ledger records the file's digest, and a checkpoint seals that record.
    const entry = (await sql<{ payload: { archive: { sha256: string } } }>`select payload from ledger where kind = 'ledger.retention'`.execute(h.db)).rows
    expect(entry.map((e) => e.payload.archive.sha256)).toEqual([result.archive.sha256])

    // The database verifies from the archive (and the snapshot) on; replay starts from the snapshot.
    for (const from of ['snapshot', 'genesis'] as const) {
      const chain = await ledgerChainVerify(h.db, { publicKey, from })
      expect(chain.problems, from).toEqual([])
      expect(chain.start.afterCheckpoint).toBeGreaterThanOrEqual(before - 1)
    }
    const replay = await ledgerReplayVerify(h.db)
    expect(replay.differences).toEqual([])
    expect(replay.snapshot).toMatchObject({ seq: result.snapshot, digestMatches: true })
    await expect(ledgerReplayVerify(h.db, { from: 'genesis' })).rejects.toThrow(ReplayStartError)
    // An export from the database leaves out what the archive took (its rows are in the file).
    const lines: LedgerExportLine[] = []
    await ledgerExport(h.db, { onLine: (line) => void lines.push(line) })
    expect(lines[0]).toMatchObject({ type: 'header', archived_through: before - 1 })
    await treeHoldsAcrossTheArchive(before - 1)
  })

  /**
   * The tree across an archive boundary: archived rows keep their leaves (their tiles stay), so
   * the root, inclusion proofs of archived leaves and consistency from a size inside the
   * archived range still hold; ledger verify's tree pass checks the rows that are left; and a
   * receipt of a delivery whose rows are left still proves them.
   */
  async function treeHoldsAcrossTheArchive(throughCheckpoint: number) {
    const reader = databaseTileReader(h.db)
    const head = (await latestTreeNote(h.db))!
    const origin = (await sql<{ origin: string }>`select origin from ledger_log`.execute(h.db)).rows[0]!.origin
    const root = openCheckpoint(head.note, [ed25519NoteVerifier(ledgerVerifierKey(origin, key.publicKey))]).checkpoint.root
    expect(Buffer.from(await treeRootFromTiles(head.size, reader)).equals(Buffer.from(root))).toBe(true)
    const archivedSize = Number((await sql<{ total: string }>`select total::text from ledger_checkpoints where seq = ${throughCheckpoint}`.execute(h.db)).rows[0]!.total)
    expect(archivedSize).toBeGreaterThan(0)
    const leafAt = async (index: number) => {
      const tile = Math.floor(index / 256)
      const [hashes] = await reader([{ level: 0, index: tile, width: Math.min(256, head.size - tile * 256) }])
      return hashes!.subarray((index % 256) * 32, (index % 256) * 32 + 32)
    }
    for (const index of new Set([0, archivedSize - 1, archivedSize, head.size - 1].filter((i) => i >= 0 && i < head.size))) {
      expect(verifyInclusion(await leafAt(index), index, head.size, await inclusionProofFromTiles(index, head.size, reader), root), `leaf ${index}`).toBe(true)
    }
    const oldRoot = await treeRootFromTiles(archivedSize, reader)
    expect(verifyConsistency(archivedSize, head.size, await consistencyProofFromTiles(archivedSize, head.size, reader), oldRoot, root)).toBe(true)
    const tree = await ledgerTreeVerify(h.db, { publicKey, full: true })
    expect(tree.problems).toEqual([])
    expect(tree.leavesChecked).toBeLessThan(head.size)
    const kept = (await sql<{ delivery_id: string }>`select delivery_id::text from ledger where delivery_id is not null order by position desc limit 1`.execute(h.db)).rows[0]!.delivery_id
    const receipt = (await ledgerReceipt(h.db, { delivery_id: kept }))!
    expect(verifyLedgerReceipt(receipt, { publicKey })).toMatchObject({ ok: true, unprovable: 0 })
  }

  it('a second archive continues after the first, with delivery retention between; verify stays clean', async () => {
    await traffic('c')
    // Delivery retention retires the settled rows of the first traffic (a ledger entry per batch).
    h.clock.advance(31 * 86_400_000)
    expect((await deliveryRetire(h.db, { now: h.clock.now(), retentionDays: 30, actor: 'system' })).retired).toBeGreaterThan(0)
    await traffic('d')
    const before = await latest()
    await expect(ledgerArchive(h.db, { beforeCheckpoint: 2, file: path.join(dir, 'again.jsonl'), key, now: () => h.clock.now(), actor: 'operator:test' })).rejects.toThrow(
      'are archived already',
    )
    await expect(ledgerArchive(h.db, { beforeCheckpoint: 10_000, file: path.join(dir, 'none.jsonl'), key, now: () => h.clock.now(), actor: 'operator:test' })).rejects.toThrow(ArchiveError)
    // Compressed, by its name.
    const file = path.join(dir, 'second.jsonl.gz')
    const second = await ledgerArchive(h.db, { beforeCheckpoint: before, file, key, now: () => h.clock.now(), actor: 'operator:test' })
    expect(second.archive.first_checkpoint).toBe(firstThrough + 1)
    // The first archive's own entry was in a partition this one dropped; the newest entry always stays.
    const entries = (await sql<{ through: number }>`select (payload ->> 'through_checkpoint')::int as through from ledger where kind = 'ledger.retention'`.execute(h.db)).rows
    expect(entries).toEqual([{ through: before - 1 }])
    expect(second.dropped.partitions).toBeGreaterThan(0)
    // The second file starts at the first one's last checkpoint (its anchor): verifiable on its own.
    expect(await verifyFile(file)).toMatchObject({ ok: true, unsealedRows: 0 })
    const bytes = readFileSync(file)
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b])
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(second.archive.sha256)
    await sealEverything(h.db, key, () => h.clock.now())
    for (const from of ['snapshot', 'genesis'] as const) expect((await ledgerChainVerify(h.db, { publicKey, from })).problems, from).toEqual([])
    const replay = await ledgerReplayVerify(h.db)
    expect(replay.differences).toEqual([])
    expect(replay.snapshot?.digestMatches).toBe(true)
    await treeHoldsAcrossTheArchive(before - 1)
  })

  it('a row deleted behind the triggers after an archive is still named: only what the archive sealed is excused', async () => {
    await traffic('e')
    const victim = (await sql<{ position: string }>`select position::text from ledger where kind = 'delivery.attempted' and payload ? 'completes' order by position desc limit 1`.execute(h.db)).rows[0]!
    const { bypassLedgerGuards } = await import('@hookledger/testkit')
    await bypassLedgerGuards(h.db, (trx) => sql`delete from ledger where position = ${victim.position}::bigint`.execute(trx))
    const chain = await ledgerChainVerify(h.db, { publicKey })
    expect(chain.ok).toBe(false)
    expect(chain.problems).toContainEqual(expect.objectContaining({ kind: 'row_missing', position: victim.position }))
  })
})
