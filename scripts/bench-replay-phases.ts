/**
 * Diagnostic for `npm run bench -- --replay-phases`: times the phases of a ledger replay-verify
 * (read, fold, fill the scratch tables, diff) the way `ledgerReplayVerify` runs them.
 */
import { sql } from 'kysely'
import {
  applyEntry,
  attemptRowOf,
  type AttemptRow,
  type LedgerRecord,
  type ProjectionSet,
} from '@hookledger/core'
import { rowsToJson, type Db } from '@hookledger/store'

export async function replayPhases(db: Db): Promise<Record<string, number>> {
  const t: Record<string, number> = {}
  let mark = performance.now()
  const lap = (name: string) => {
    const now = performance.now()
    t[name] = Math.round((t[name] ?? 0) + now - mark)
    mark = now
  }
  await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const set: ProjectionSet = { endpoints: new Map(), deliveries: new Map() }
      const attempts: AttemptRow[] = []
      let after = '0'
      for (;;) {
        const rows = (
          await sql<LedgerRecord>`
          select position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor
          from ledger where position > ${after}::bigint order by position limit 20000
        `.execute(trx)
        ).rows
        lap('read')
        if (rows.length === 0) break
        for (const e of rows) {
          applyEntry(set, e)
          const a = attemptRowOf(e, e.position)
          if (a) attempts.push(a)
        }
        after = rows[rows.length - 1]!.position
        lap('fold')
      }
      for (const [table, like, rows] of [
        ['replay_endpoints', 'endpoints', [...set.endpoints.values()]],
        ['replay_deliveries', 'deliveries', [...set.deliveries.values()]],
        ['replay_delivery_attempts', 'delivery_attempts', attempts],
      ] as const) {
        await sql`create temp table ${sql.ref(table)} (like ${sql.ref(like)}) on commit drop`.execute(
          trx,
        )
        for (let i = 0; i < rows.length; i += 5000) {
          const json = rowsToJson(rows.slice(i, i + 5000))
          lap('fill_json')
          await sql`insert into ${sql.ref(table)} select * from jsonb_populate_recordset(null::${sql.ref(like)}, ${json}::jsonb)`.execute(
            trx,
          )
          lap('fill_insert')
        }
      }
      for (const [table, key] of [
        ['endpoints', 'id'],
        ['deliveries', 'id'],
        ['delivery_attempts', 'ledger_position'],
      ] as const) {
        await sql`
        select to_jsonb(l) as live, to_jsonb(r) as replayed
        from ${sql.ref(table)} l full join ${sql.ref('replay_' + table)} r on l.${sql.ref(key)} = r.${sql.ref(key)}
        where l is distinct from r
        order by coalesce(l.${sql.ref(key)}, r.${sql.ref(key)})
        limit 1000
      `.execute(trx)
        lap(`diff_${table}`)
      }
    })
  return t
}
