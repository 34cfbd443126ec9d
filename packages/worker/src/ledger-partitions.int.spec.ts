import pg from 'pg'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import {
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  ledgerChainVerify,
  ledgerPartitions,
  ledgerPartitionsAhead,
  ledgerRetention,
} from '@hookledger/ledger'
import { createDb, type Db } from '@hookledger/store'
import { engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

describe('ledger partitions at work', () => {
  let h: EngineHarness
  // The database's own superuser, for what no role of the install may do (restart the
  // position sequence, write the ledger directly, try the guards).
  let admin: Db | null = null
  afterEach(async () => {
    await admin?.destroy()
    admin = null
    await h?.close()
  })

  it('are created ahead as positions grow; rows that outran them wait in the default partition and the next starts above them', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    const firstTo = Number((await ledgerPartitions(h.db)).find((p) => !p.isDefault)!.from)
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
    const suPool = new pg.Pool({ connectionString: h.url, max: 1 })
    // The teardown drops the database: a connection it ends must not surface as an unhandled error.
    suPool.on('error', () => {})
    suPool.on('connect', (client) => client.on('error', () => {}))
    const su = (admin = createDb(suPool))
    const outrun = await su.transaction().execute(async (trx) => {
      const last = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).at(-1)!
      await sql`alter table ledger alter column position restart with ${sql.lit(Number(last.to) + 5)}`.execute(trx)
      return (await sql<{ position: string }>`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (${h.clock.now()}, 'x', 'token.issued', '{}', 'x') returning position::text`.execute(trx)).rows[0]!.position
    })
    expect((await sql<{ part: string }>`select tableoid::regclass::text as part from ledger where position = ${outrun}::bigint`.execute(h.db)).rows[0]!.part).toBe('ledger_p_default')
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 2 })).toBe(2)
    const after = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).slice(-2)
    expect(after.map((p) => p.from)).toEqual([String(Number(outrun) + 1), String(Number(outrun) + 11)])
    expect((await sql<{ position: string }>`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (${h.clock.now()}, 'x', 'token.issued', '{}', 'x') returning tableoid::regclass::text as position`.execute(su)).rows[0]!.position).toBe(after[0]!.name)
    // Append-only on every partition, the made-ahead ones too: row triggers are cloned from the
    // parent, and each carries its own TRUNCATE trigger.
    await expect(sql`delete from ledger_p_default`.execute(su)).rejects.toThrow('the ledger is append-only: DELETE on ledger_p_default refused')
    for (const p of await ledgerPartitions(h.db)) {
      await expect(sql`truncate ${sql.table(p.name)}`.execute(su), p.name).rejects.toThrow(`the ledger is append-only: TRUNCATE on ${p.name} refused`)
    }
  })

  it('the retention function drops whole partitions an archive holds, with one entry each call; never one with rows past its checkpoint', async () => {
    h = await engineHarness()
    await h.createEndpoint()
    expect(await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 3 })).toBe(0)
    const big = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault)
    const positionNow = Number((await sql<{ n: string }>`select max(position)::text as n from ledger`.execute(h.db)).rows[0]!.n)
    expect(positionNow).toBeLessThan(Number(big[0]!.to))
    await sealEverything(h.db, key, () => h.clock.now())
    const latest = async () => Number((await sql<{ seq: string }>`select max(seq)::text as seq from ledger_checkpoints`.execute(h.db)).rows[0]!.seq)
    const first = await latest()
    const retention = (throughCheckpoint: number, beforePosition: string | null) =>
      ledgerRetention(h.db, { throughCheckpoint, beforePosition, archive: null, actor: 'operator', now: h.clock.now() })
    const entries = async () => (await sql<{ payload: Record<string, unknown>; actor: string }>`select payload, actor from ledger where kind = 'ledger.retention' order by position`.execute(h.db)).rows
    // A position inside a partition drops nothing of it; the archive is still recorded.
    expect(await retention(first, String(positionNow))).toBe(0)
    expect(await entries()).toEqual([
      { payload: { through_checkpoint: first, before_position: null, rows: 0, partitions: 0, archive: null }, actor: 'operator' },
    ])
    await expect(retention(first + 100, null)).rejects.toThrow(`checkpoint ${first + 100} does not exist`)

    // A partition with rows past the archive's checkpoint is refused, and nothing is recorded.
    await h.publish({ id: 'evt_unsealed' })
    await expect(retention(first, big[0]!.to!)).rejects.toThrow(`ledger partition ${big[0]!.name} holds rows checkpoint ${first} has not sealed`)
    expect(await entries()).toHaveLength(1)
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
