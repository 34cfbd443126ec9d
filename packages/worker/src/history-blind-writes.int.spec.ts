/**
 * The hot path's writes never read the history: with tens of thousands of events, deliveries
 * and ledger rows behind them, a publish, a fan-out, a claim and a settle scan none of those
 * tables (every row they touch is found through an index). A small write runs on plans made
 * once per connection (writePlanMode), whose estimates know nothing of the arguments, so a
 * statement that joins a table to a list it was handed can fall back to reading the table whole
 * — and cost grows with history, unseen until an installation is old. Counted by PostgreSQL
 * (`pg_stat_user_tables.seq_scan`), not timed.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JOB_TIMEOUT_MS, createEventCatalog } from '@hookledger/core'
import pg from 'pg'
import { PREPARE_AFTER, createDb, deliveryClaim, deliverySettleBatch, eventInsert, fanoutRun, type ClaimedDelivery, type Db } from '@hookledger/store'
import { adminDbOf, bypassLedgerGuards, completedSettlement, engineHarness, type EngineHarness } from '@hookledger/testkit'

const HISTORY = 20_000
/** The tables that grow with every event and delivery (ledger: its partitions). */
const HISTORY_TABLES = /^(events|delivery_origins|delivery_states|ledger_p_.*)$/

/** Sequential scans so far of each history table, as counted after this connection's own statements. */
async function seqScans(conn: Db): Promise<Map<string, number>> {
  // Counters reach the shared statistics when a backend goes idle, at most once a second unless forced.
  await sql`select pg_stat_force_next_flush()`.execute(conn)
  const rows = (await sql<{ relname: string; seq_scan: string }>`select relname, seq_scan from pg_stat_user_tables`.execute(conn)).rows
  return new Map(rows.filter((r) => HISTORY_TABLES.test(r.relname)).map((r) => [r.relname, Number(r.seq_scan)]))
}

function scannedSince(before: Map<string, number>, after: Map<string, number>): string[] {
  return [...after].filter(([t, n]) => n > (before.get(t) ?? 0)).map(([t, n]) => `${t} +${n - (before.get(t) ?? 0)}`)
}

describe('the hot path on a long history', () => {
  let h: EngineHarness
  let endpointId: string
  let serverVersion = 0
  beforeAll(async () => {
    h = await engineHarness()
    endpointId = (await h.createEndpoint()).endpoint.id
    await h.createEndpoint()
    const admin = adminDbOf(h.db)
    const at = h.clock.now()
    // History forged past the one door: its shape matters here, not its story.
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`
        insert into events (owner_id, id, type, subject, occurred_at, published_at, data, fanned_out_at)
        select ${h.owner}, 'old_' || g, 'booking.created', 'booking://old', ${at}, ${at}, '{}', ${at} from generate_series(1, ${HISTORY}) g
      `.execute(trx)
      await sql`
        insert into delivery_origins (id, owner_id, endpoint_id, event_id, event_type, created_at)
        select gen_random_uuid(), ${h.owner}, ${endpointId}::uuid, 'old_' || g, 'booking.created', ${at} from generate_series(1, ${HISTORY}) g
      `.execute(trx)
      await sql`
        insert into delivery_states (id, endpoint_id, state, run, run_started_at, attempts, next_attempt_at, updated_at)
        select id, endpoint_id, 'completed', 1, ${at}, 1, null, ${at} from delivery_origins
      `.execute(trx)
      await sql`
        insert into ledger (occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
        select ${at}, ${h.owner}, 'delivery.attempted', endpoint_id, id, event_id, '{}', 'worker:old' from delivery_origins
      `.execute(trx)
    })
    // As the statistics refresh would have (the planner's view of a long history).
    await sql`analyze`.execute(admin)
    // The counters are flushed on demand by the connection that made them (a test-only grant;
    // PostgreSQL 15+, whose statistics live in shared memory: 14's collector reports late).
    serverVersion = Number((await sql<{ v: string }>`select current_setting('server_version_num') as v`.execute(admin)).rows[0]!.v)
    if (serverVersion >= 150000) await sql`grant execute on function pg_stat_force_next_flush() to ${sql.id(h.roleName('service'))}`.execute(admin)
  }, 60_000)
  afterAll(() => h?.close())

  // Planned afresh each time, and with repeated statements prepared, as the service runs by default (HOOKLEDGER_DB_PREPARED_STATEMENTS).
  it.for([false, true])('publish, fan-out, claim and settle scan no history table (prepared statements: %s)', async (prepare, ctx) => {
    if (serverVersion < 150000) ctx.skip()
    const db = createDb(new pg.Pool({ connectionString: h.roleUrl('service'), max: 1 }), { prepare })
    await db.connection().execute(async (conn) => {
      const catalog = createEventCatalog()
      const scans: string[] = []
      // Until the plans kept for the connection are the ones in use: its repeated statements are
      // prepared after PREPARE_AFTER runs, and PostgreSQL weighs a generic plan after five more.
      for (let round = 1; round <= PREPARE_AFTER + 7; round++) {
        const step = async (name: string, fn: () => Promise<unknown>) => {
          const before = await seqScans(conn)
          await fn()
          scans.push(...scannedSince(before, await seqScans(conn)).map((t) => `${name}, round ${round}: ${t}`))
        }
        const now = h.clock.now()
        // Two events: each endpoint's claim reads the delivery after its head, and the settle
        // claims that one in the same call (the pipelined lease), then settles it alone.
        for (const n of [1, 2]) {
          await step('publish', () =>
            conn.transaction().execute((trx) =>
              eventInsert(trx, {
                owner_id: h.owner,
                event: { id: `new_${prepare}_${round}_${n}`, type: 'booking.created', subject: 'booking://new', occurred_at: now, data: {} },
                now,
                actor: 'system',
              }),
            ),
          )
        }
        await step('fan-out', () => fanoutRun(conn, { now, catalog, embedAdmits: async () => false, actor: 'worker:t', limit: 10 }))
        let claimed: ClaimedDelivery[] = []
        await step('claim', async () => {
          claimed = (await deliveryClaim(conn, { now, limit: 10, actor: 'worker:t' })).claimed
        })
        expect(claimed.map((c) => c.following !== undefined)).toEqual([true, true])
        const next = { actor: 'worker:t', leaseMs: JOB_TIMEOUT_MS }
        const following = new Map(claimed.map((c) => [c.delivery.endpoint_id, c.following!]))
        h.clock.advance(1_000)
        let passedOn: ClaimedDelivery[] = []
        await step('settle, claiming what follows', async () => {
          passedOn = (await deliverySettleBatch(conn, claimed.map((c) => completedSettlement(c, h.clock.now(), 'worker:t')), h.clock.now(), { ...next, following })).claimed
        })
        expect(passedOn).toHaveLength(2)
        h.clock.advance(1_000)
        await step('settle', () => deliverySettleBatch(conn, passedOn.map((c) => completedSettlement(c, h.clock.now(), 'worker:t')), h.clock.now(), next))
      }
      expect(scans).toEqual([])
    }).finally(() => db.destroy())
  })
})
