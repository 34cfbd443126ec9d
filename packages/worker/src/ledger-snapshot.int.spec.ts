import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import {
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  verifyCheckpointSignature,
  ledgerChainVerify,
  ledgerReplayVerify,
  ledgerSeal,
  ledgerSealUntil,
  ledgerSnapshotTake,
  latestSignedSnapshot,
  SnapshotError,
  checkpointOf,
  CHECKPOINT_HEADER_COLUMNS,
  type CheckpointHeaderRow,
} from '@hookledger/ledger'
import { endpointDelete } from '@hookledger/store'
import { bypassLedgerGuards, engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'
import { LedgerSealerLoop } from './ledger-sealer-loop.js'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

/** Traffic that moves every kind of row: completions, retries, a deleted endpoint's discards. */
async function traffic(h: EngineHarness, tag: string, endpoints: { id: string }[]) {
  for (let i = 0; i < 4; i++) await h.publish({ id: `evt_${tag}_${i}` })
  h.receiver.enqueue({ status: 500 }, { status: 503 })
  await h.step()
  h.clock.advance(3_600_000)
  await h.step()
  h.clock.advance(3_600_000)
  await h.step()
  if (endpoints.length > 1) {
    const gone = endpoints.pop()!
    await h.publish({ id: `evt_${tag}_late` })
    await h.db.transaction().execute((trx) => endpointDelete(trx, { owner_id: h.owner, now: h.clock.now(), actor: 'owner:test' }, gone.id))
  }
}

describe('projection snapshots', () => {
  let h: EngineHarness
  afterEach(() => h?.close())

  it('are signed by a checkpoint; replay and verify start from the latest one and stay clean as the ledger grows', async () => {
    h = await engineHarness()
    const endpoints = [(await h.createEndpoint()).endpoint, (await h.createEndpoint()).endpoint, (await h.createEndpoint()).endpoint]
    await traffic(h, 'a', endpoints)
    await sealEverything(h.db, key, () => h.clock.now())

    const first = await ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })
    expect(first).toMatchObject({ fresh: true, snapshot: { seq: 1, endpoints: 3 } })
    expect(first.snapshot.deliveries).toBeGreaterThan(10)
    // The descriptor is inside the signed message: the checkpoint verifies with it, and not without it or with another digest.
    const signer = (await sql<CheckpointHeaderRow>`select ${CHECKPOINT_HEADER_COLUMNS} from ledger_checkpoints where seq = ${first.checkpoint}`.execute(h.db)).rows[0]!
    const cp = checkpointOf(signer)
    expect(cp.snapshot).toEqual(first.snapshot)
    expect(verifyCheckpointSignature(cp, publicKey)).toBe(true)
    expect(verifyCheckpointSignature({ ...cp, snapshot: null }, publicKey)).toBe(false)
    expect(verifyCheckpointSignature({ ...cp, snapshot: { ...cp.snapshot!, digest: '0'.repeat(64) } }, publicKey)).toBe(false)
    // Nothing appended since: the same snapshot.
    expect(await ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })).toMatchObject({ fresh: false, snapshot: { seq: 1 } })

    await traffic(h, 'b', endpoints)
    await sealEverything(h.db, key, () => h.clock.now())
    const fromSnapshot = await ledgerReplayVerify(h.db)
    const fromGenesis = await ledgerReplayVerify(h.db, { from: 'genesis' })
    expect(fromSnapshot.differences).toEqual([])
    expect(fromGenesis.differences).toEqual([])
    expect(fromSnapshot.snapshot).toMatchObject({ seq: 1, checkpoint: first.checkpoint, digestMatches: true, endpoints: 3 })
    expect(fromGenesis.snapshot).toBeNull()
    expect([fromSnapshot.endpoints, fromSnapshot.deliveries]).toEqual([fromGenesis.endpoints, fromGenesis.deliveries])
    // Only the suffix is folded.
    expect(fromSnapshot.entriesFolded.deliveries).toBeLessThan(fromGenesis.entriesFolded.deliveries / 2)
    const chainFromSnapshot = await ledgerChainVerify(h.db, { publicKey })
    const chainFromGenesis = await ledgerChainVerify(h.db, { publicKey, from: 'genesis' })
    expect(chainFromSnapshot.problems).toEqual([])
    expect(chainFromGenesis.problems).toEqual([])
    expect(chainFromSnapshot.start.reason).toBe('snapshot')
    expect(chainFromSnapshot.rows).toBeLessThan(chainFromGenesis.rows)
    expect(chainFromSnapshot.headerOnly).toBeGreaterThan(0)

    // The second snapshot folds the first one's rows and the entries since; its rows replace the first's.
    const second = await ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })
    expect(second).toMatchObject({ fresh: true, snapshot: { seq: 2, endpoints: 3 } })
    expect(second.entriesFolded).toBeLessThan(fromGenesis.entriesFolded.deliveries)
    const held = await sql<{ seq: string; n: string }>`select snapshot_seq::text as seq, sum(jsonb_array_length(rows))::text as n from ledger_snapshot_rows group by 1`.execute(h.db)
    expect(held.rows).toEqual([{ seq: '2', n: String(second.snapshot.endpoints + second.snapshot.deliveries) }])
    // It is the same fold as from the first entry: a replay from it is clean, and matches the live tables.
    expect((await ledgerReplayVerify(h.db)).differences).toEqual([])
  })

  it('a snapshot row edited behind the triggers is caught: the replay names the digest, and no new snapshot is folded from it', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    await traffic(h, 'c', [])
    await sealEverything(h.db, key, () => h.clock.now())
    await ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })
    await h.publish({ id: 'evt_after' })
    await h.step()
    // Consistently with the live row, so only the digest can tell.
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`update ledger_snapshot_rows set rows = jsonb_set(rows, '{0,attempts}', '7') where entity = 'delivery' and chunk = 0`.execute(trx)
      await sql`update delivery_states set attempts = 7 where id = (select (rows -> 0 ->> 'id')::uuid from ledger_snapshot_rows where entity = 'delivery' and chunk = 0)`.execute(trx)
    })
    const replay = await ledgerReplayVerify(h.db)
    expect(replay.snapshot).toMatchObject({ seq: 1, digestMatches: false })
    await sealEverything(h.db, key, () => h.clock.now())
    await expect(ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })).rejects.toThrow(SnapshotError)
    await expect(ledgerSnapshotTake(h.db, { key, now: () => h.clock.now() })).rejects.toThrow("snapshot 1's rows do not hash to the digest checkpoint")
    // From the first entry, the edited live row is a difference again.
    expect((await ledgerReplayVerify(h.db, { from: 'genesis' })).differences.map((d) => d.columns)).toEqual([['attempts']])
  })

  it('cuts at a position every row below which is committed, and waits for rows below it that the horizon still holds back', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    await h.publish({ id: 'evt_before' })
    await h.step()
    // An open transaction that took its xid early holds the sealing horizon: rows written after
    // it (below the cut) cannot be sealed until it ends.
    const held = await h.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn)
      await sql`select pg_current_xact_id()`.execute(conn)
      await h.publish({ id: 'evt_during' })
      await h.step()
      const taking = ledgerSnapshotTake(h.db, { key, now: () => h.clock.now(), signWithinMs: 0 }) // one seal, then the verdict: no waiting
      await expect(taking).rejects.toThrow('a long transaction holds the sealing horizon back')
      await sql`rollback`.execute(conn)
      return true
    })
    expect(held).toBe(true)
    // Once it ends, the stored snapshot is signed by the next seal, as the sealer finds it covered
    // (seals until then: another file's open transaction can hold the horizon back a moment).
    await ledgerSealUntil(h.db, { key, now: () => h.clock.now(), withinMs: 30_000, done: async () => (await latestSignedSnapshot(h.db)) !== null })
    const signed = await latestSignedSnapshot(h.db)
    expect(signed?.descriptor.seq).toBe(1)
    expect((await ledgerReplayVerify(h.db)).snapshot).toMatchObject({ seq: 1, digestMatches: true })
  })

  it('the sealer loop keeps the snapshot no older than its interval, on the injected clock', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    await h.publish({ id: 'evt_day_1' })
    await h.step()
    const day = 86_400_000
    const loop = new LedgerSealerLoop({ db: h.db, key, clock: h.clock, intervalMs: 1_000, snapshotEveryMs: day })
    expect(await loop.snapshotIfDue(day)).toBe(true) // none yet
    expect(await loop.snapshotIfDue(day)).toBe(false)
    h.clock.advance(day - 1_000)
    await h.publish({ id: 'evt_day_2' })
    await h.step()
    expect(await loop.snapshotIfDue(day)).toBe(false)
    h.clock.advance(2_000)
    expect(await loop.snapshotIfDue(day)).toBe(true)
    expect((await latestSignedSnapshot(h.db))?.descriptor).toMatchObject({ seq: 2, deliveries: 2 })
    expect((await ledgerReplayVerify(h.db)).differences).toEqual([])
  })
})
