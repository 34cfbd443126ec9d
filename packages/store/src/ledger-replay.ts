import { sql } from 'kysely'
import {
  applyEntry,
  attemptRowOf,
  type AttemptRow,
  type LedgerRecord,
  type ProjectionSet,
} from '@hookledger/core'
import type { Db, Trx } from './database.js'
import { rowsToJson } from './projection-write.js'

/** One projection row that differs between the live tables and the rebuild. */
export interface ReplayDifference {
  readonly table: 'endpoints' | 'deliveries' | 'delivery_attempts'
  readonly key: string
  /** `changed`: both exist; `missing_live`: only the rebuild has it; `extra_live`: only live. */
  readonly kind: 'changed' | 'missing_live' | 'extra_live'
  readonly columns: string[]
  readonly live: Record<string, unknown> | null
  readonly replayed: Record<string, unknown> | null
}

export interface ReplayReport {
  readonly ledgerRows: number
  readonly endpoints: number
  readonly deliveries: number
  readonly attempts: number
  readonly differences: ReplayDifference[]
  readonly ms: number
}

const PAGE = 20_000
const CHUNK = 5_000

/** Reads the whole ledger in position order, page by page. */
async function* ledgerPages(trx: Trx): AsyncGenerator<LedgerRecord[]> {
  let after = '0'
  for (;;) {
    const rows = (
      await sql<LedgerRecord>`
        select position, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor
        from ledger where position > ${after}::bigint order by position limit ${PAGE}
      `.execute(trx)
    ).rows
    if (rows.length === 0) return
    yield rows
    after = rows[rows.length - 1]!.position
  }
}

async function fill(trx: Trx, table: string, like: string, rows: readonly object[]): Promise<void> {
  await sql`create temp table ${sql.ref(table)} (like ${sql.ref(like)}) on commit drop`.execute(trx)
  // The next chunk's JSON is built while the database inserts the previous one (one statement
  // in flight at a time).
  let inserting: Promise<unknown> = Promise.resolve()
  for (let i = 0; i < rows.length; i += CHUNK) {
    const json = rowsToJson(rows.slice(i, i + CHUNK))
    await inserting
    inserting = sql`
      insert into ${sql.ref(table)} select * from jsonb_populate_recordset(null::${sql.ref(like)}, ${json}::jsonb)
    `.execute(trx)
  }
  await inserting
}

async function diff(
  trx: Trx,
  table: ReplayDifference['table'],
  key: string,
): Promise<ReplayDifference[]> {
  const rows = (
    await sql<{ live: Record<string, unknown> | null; replayed: Record<string, unknown> | null }>`
      select to_jsonb(l) as live, to_jsonb(r) as replayed
      from ${sql.ref(table)} l full join ${sql.ref('replay_' + table)} r on l.${sql.ref(key)} = r.${sql.ref(key)}
      where l is distinct from r
      order by coalesce(l.${sql.ref(key)}, r.${sql.ref(key)})
      limit 1000
    `.execute(trx)
  ).rows
  return rows.map(({ live, replayed }) => {
    const cols = Object.keys(live ?? replayed ?? {}).filter(
      (c) => JSON.stringify(live?.[c]) !== JSON.stringify(replayed?.[c]),
    )
    return {
      table,
      key: String((live ?? replayed)![key]),
      kind: live === null ? 'missing_live' : replayed === null ? 'extra_live' : 'changed',
      columns: live && replayed ? cols : [],
      live,
      replayed,
    }
  })
}

/**
 * Rebuilds endpoints, deliveries and the attempt history from the ledger alone (folding every
 * entry through the same evolve functions the writers use) into temporary scratch tables, and
 * diffs them against the live tables — all in one repeatable-read snapshot, so it is safe on a
 * running system. Nothing live is changed.
 */
export async function ledgerReplayVerify(db: Db): Promise<ReplayReport> {
  const started = performance.now()
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const set: ProjectionSet = { endpoints: new Map(), deliveries: new Map() }
      const attempts: AttemptRow[] = []
      let ledgerRows = 0
      for await (const page of ledgerPages(trx)) {
        for (const e of page) {
          applyEntry(set, e)
          const a = attemptRowOf(e, e.position)
          if (a) attempts.push(a)
        }
        ledgerRows += page.length
      }
      await fill(trx, 'replay_endpoints', 'endpoints', [...set.endpoints.values()])
      await fill(trx, 'replay_deliveries', 'deliveries', [...set.deliveries.values()])
      await fill(trx, 'replay_delivery_attempts', 'delivery_attempts', attempts)
      const differences = [
        ...(await diff(trx, 'endpoints', 'id')),
        ...(await diff(trx, 'deliveries', 'id')),
        ...(await diff(trx, 'delivery_attempts', 'ledger_position')),
      ]
      return {
        ledgerRows,
        endpoints: set.endpoints.size,
        deliveries: set.deliveries.size,
        attempts: attempts.length,
        differences,
        ms: Math.round(performance.now() - started),
      }
    })
}
