import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { generateLedgerSigningKey, parseLedgerPublicKey, parseLedgerSigningKey } from '@hookledger/core'
import {
  MIGRATIONS_DIR,
  ledgerChainVerify,
  ledgerPartitions,
  ledgerPartitionsAhead,
  ledgerReplayVerify,
  ledgerRetention,
  migrateToLatest,
  type Db,
} from '@hookledger/store'
import { engineHarness, sealEverything, testDatabase, type EngineHarness } from '@hookledger/testkit'
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

/** What must survive the migration: every row's content and position, and the next position. */
async function fingerprint(db: Db) {
  return (
    await sql<{ rows: string; max: string; digest: string }>`
      select count(*)::text as rows, max(position)::text as max,
             md5(string_agg(position || tx_id::text || occurred_at::text || kind || coalesce(delivery_id::text, '') || payload::text || actor, '|' order by position)) as digest
      from ledger
    `.execute(db)
  ).rows[0]!
}

const relkind = async (db: Db, name: string) =>
  (await sql<{ relkind: string }>`select relkind::text from pg_class where relname = ${name}`.execute(db)).rows[0]?.relkind

/** A database of its own, empty, migrated by the caller (the template is already at the latest version). */
async function emptyDatabase(): Promise<{ db: Db; drop: () => Promise<void> }> {
  const t = await testDatabase({ empty: true, poolSize: 2 })
  return { db: t.db, drop: () => t.close() }
}

describe('migration 0011: the ledger becomes range-partitioned', () => {
  it('keeps every row, position, index and guard of an existing ledger, and positions continue', async () => {
    const { db, drop } = await emptyDatabase()
    const before10 = mkdtempSync(path.join(tmpdir(), 'hookledger-migrations-'))
    try {
      for (const f of readdirSync(MIGRATIONS_DIR).filter((f) => f < '0011')) cpSync(MIGRATIONS_DIR + f, path.join(before10, f))
      await migrateToLatest(db, before10 + '/')
      await syntheticLedgerHistory(db, { deliveries: 500, endpoints: 10 })
      // A rolled-back insert leaves a gap at the end: the next position must still be past it.
      await db.transaction().execute(async (trx) => {
        await sql`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (now(), 'x', 'token.issued', '{}', 'x')`.execute(trx)
        throw new Error('roll back')
      }).catch(() => {})
      const old = await fingerprint(db)
      expect(await relkind(db, 'ledger')).toBe('r')

      await migrateToLatest(db)
      expect(await relkind(db, 'ledger')).toBe('p')
      expect(await fingerprint(db)).toEqual(old)
      const parts = await ledgerPartitions(db)
      expect(parts.map((p) => [p.name, p.from, p.to])).toEqual([
        ['ledger_p_initial', null, String(Number(old.max) + 2)],
        [`ledger_p_${String(Number(old.max) + 2).padStart(19, '0')}`, String(Number(old.max) + 2), String(Number(old.max) + 2 + 1_000_000)],
        [`ledger_p_${String(Number(old.max) + 2 + 1_000_000).padStart(19, '0')}`, String(Number(old.max) + 2 + 1_000_000), String(Number(old.max) + 2 + 2_000_000)],
        ['ledger_p_default', null, null],
      ])
      // The old indexes were attached to the new parent's, not rebuilt beside them.
      const attached = (
        await sql<{ child: string; parent: string }>`
          select c.relname::text as child, p.relname::text as parent from pg_inherits i
          join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
          where c.relname like 'ledger_p_initial%' and c.relkind = 'i' order by 1
        `.execute(db)
      ).rows
      expect(attached).toEqual([
        { child: 'ledger_p_initial_chain_order_idx', parent: 'ledger_chain_order_idx' },
        { child: 'ledger_p_initial_delivery_id_idx', parent: 'ledger_delivery_id_idx' },
        { child: 'ledger_p_initial_endpoint_id_occurred_at_idx', parent: 'ledger_endpoint_attempts_idx' },
        { child: 'ledger_p_initial_endpoint_idx', parent: 'ledger_endpoint_idx' },
        // Migrations 0016 (the event decisions index) and 0017 (endpoint attempts) create theirs on every partition.
        { child: 'ledger_p_initial_event_id_idx', parent: 'ledger_event_decisions_idx' },
        { child: 'ledger_p_initial_pkey', parent: 'ledger_pkey' },
        // Migration 0018: the archive's record.
        { child: 'ledger_p_initial_position_idx', parent: 'ledger_retention_idx' },
        { child: 'ledger_p_initial_retired_idx', parent: 'ledger_retired_idx' },
      ])
      // Positions continue past the gap, into the next partition.
      const next = await sql<{ position: string }>`
        insert into ledger (occurred_at, owner_id, kind, payload, actor) values (now(), 'x', 'token.issued', '{}', 'x') returning position::text
      `.execute(db)
      expect(next.rows[0]!.position).toBe(String(Number(old.max) + 2))
      // Append-only, on the parent and on each partition.
      await expect(sql`update ledger set actor = 'forger' where position = 1`.execute(db)).rejects.toThrow('the ledger is append-only: UPDATE refused')
      await expect(sql`delete from ledger_p_initial where position = 1`.execute(db)).rejects.toThrow('the ledger is append-only: DELETE refused')
      for (const t of ['ledger', 'ledger_p_initial', parts[1]!.name, 'ledger_p_default']) {
        await expect(sql`truncate ${sql.table(t)}`.execute(db), t).rejects.toThrow('the ledger is append-only: TRUNCATE refused')
      }
      // The attempt history view reads through the parent.
      const attempts = await sql<{ n: string }>`select count(*)::text as n from delivery_attempts`.execute(db)
      expect(Number(attempts.rows[0]!.n)).toBeGreaterThan(500)
      expect((await ledgerReplayVerify(db)).differences).toEqual([])
    } finally {
      rmSync(before10, { recursive: true, force: true })
      await drop()
    }
  })
})

describe('ledger partitions at work', () => {
  let h: EngineHarness
  afterEach(() => h?.close())

  it('are created ahead as positions grow; rows that outran them wait in the default partition and the next starts above them', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    const firstTo = Number((await ledgerPartitions(h.db)).find((p) => p.name !== 'ledger_p_initial' && !p.isDefault)!.from)
    // Small partitions from here on; a full pass makes nothing new while two lie ahead.
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 2 })).toBe(0)
    for (let i = 0; i < 3; i++) await h.publish({ id: `evt_p${i}` })
    await h.step()
    expect(await h.dispatcher.maintenanceOnce()).toMatchObject({ rescued: 0 })
    const { rows: where } = await sql<{ part: string; n: number }>`
      select tableoid::regclass::text as part, count(*)::int as n from ledger group by 1 order by 1
    `.execute(h.db)
    expect(where.every((r) => r.part !== 'ledger_p_default')).toBe(true)
    expect(where[0]!.part).toBe(`ledger_p_${String(firstTo).padStart(19, '0')}`)

    // Outrun on purpose: a partition layout with nothing ahead of a big burst.
    await h.dispatcher.stop()
    const outrun = await h.db.transaction().execute(async (trx) => {
      const last = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).at(-1)!
      await sql`alter table ledger alter column position restart with ${sql.lit(Number(last.to) + 5)}`.execute(trx)
      return (await sql<{ position: string }>`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (${h.clock.now()}, 'x', 'token.issued', '{}', 'x') returning position::text`.execute(trx)).rows[0]!.position
    })
    expect((await sql<{ part: string }>`select tableoid::regclass::text as part from ledger where position = ${outrun}::bigint`.execute(h.db)).rows[0]!.part).toBe('ledger_p_default')
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 2 })).toBe(2)
    const after = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).slice(-2)
    expect(after.map((p) => p.from)).toEqual([String(Number(outrun) + 1), String(Number(outrun) + 11)])
    expect((await sql<{ position: string }>`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (${h.clock.now()}, 'x', 'token.issued', '{}', 'x') returning tableoid::regclass::text as position`.execute(h.db)).rows[0]!.position).toBe(after[0]!.name)
  })

  it('the retention function drops whole partitions an archive holds, with one entry each call; never one with rows past its checkpoint', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 3 })).toBe(0)
    const big = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault && p.name !== 'ledger_p_initial')
    const positionNow = Number((await sql<{ n: string }>`select max(position)::text as n from ledger`.execute(h.db)).rows[0]!.n)
    expect(positionNow).toBeLessThan(Number(big[0]!.to))
    await sealEverything(h.db, key, () => h.clock.now())
    const latest = async () => Number((await sql<{ seq: string }>`select max(seq)::text as seq from ledger_checkpoints`.execute(h.db)).rows[0]!.seq)
    const first = await latest()
    // ledger_p_initial (empty: the template was migrated with no ledger) lies entirely below
    // the first position: dropped, and audited.
    const initial = (await ledgerPartitions(h.db)).find((p) => p.name === 'ledger_p_initial')!
    const retention = (throughCheckpoint: number, beforePosition: string | null) =>
      ledgerRetention(h.db, { throughCheckpoint, beforePosition, archive: null, actor: 'operator', now: h.clock.now() })
    expect(await retention(first, initial.to!)).toBe(0)
    expect((await ledgerPartitions(h.db)).some((p) => p.name === 'ledger_p_initial')).toBe(false)
    const entries = async () => (await sql<{ payload: Record<string, unknown>; actor: string }>`select payload, actor from ledger where kind = 'ledger.retention' order by position`.execute(h.db)).rows
    expect(await entries()).toEqual([
      { payload: { through_checkpoint: first, before_position: Number(initial.to), rows: 0, partitions: 1, archive: null }, actor: 'operator' },
    ])
    // A position inside a partition drops nothing of it; the archive is still recorded.
    expect(await retention(first, String(positionNow))).toBe(0)
    expect((await entries())[1]!.payload).toMatchObject({ before_position: null, partitions: 0 })
    await expect(retention(first + 100, null)).rejects.toThrow(`checkpoint ${first + 100} does not exist`)

    // A partition with rows past the archive's checkpoint is refused, and nothing is recorded.
    await h.publish({ id: 'evt_unsealed' })
    await expect(retention(first, big[0]!.to!)).rejects.toThrow(`ledger partition ${big[0]!.name} holds rows checkpoint ${first} has not sealed`)
    expect(await entries()).toHaveLength(2)
    // Sealed through a later checkpoint, it leaves whole: every row of it, one entry.
    await sealEverything(h.db, key, () => h.clock.now())
    const inIt = Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(big[0]!.name)}`.execute(h.db)).rows[0]!.n)
    expect(inIt).toBeGreaterThan(0)
    expect(await retention(await latest(), big[0]!.to!)).toBe(inIt)
    expect((await ledgerPartitions(h.db)).map((p) => p.name)).not.toContain(big[0]!.name)
    // Once the entry is sealed, the chain verifies from the archive's checkpoint on: the dropped rows are not missing.
    await sealEverything(h.db, key, () => h.clock.now())
    const chain = await ledgerChainVerify(h.db, { publicKey, from: 'genesis' })
    expect(chain.problems).toEqual([])
    expect(chain.start).toMatchObject({ reason: 'archive' })
  })
})
