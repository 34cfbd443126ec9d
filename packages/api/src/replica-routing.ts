import type { OpDeps, Principal } from '@hookledger/ops'
import { isLsn } from '@hookledger/store'

/**
 * The operations that read a replica when there is one: the console's history reads (delivery
 * logs, attempts, stats, receipts, exports, verify). Everything else, and every write, is the
 * primary's.
 */
export const REPLICA_READ_OPS: ReadonlySet<string> = new Set([
  'deliveries.list',
  'webhooks.deliveries',
  'webhooks.attempts',
  'webhooks.stats',
  'webhooks.receipt',
  'ledger.export',
  'ledger.verify',
])

/** Answer header: how far behind the replica that answered was. */
export const REPLICA_LAG_HEADER = 'x-hookledger-replica-lag-ms'
/** Answer header on a write: the primary's WAL position after it. Request header: read at least that. */
export const WRITE_LSN_HEADER = 'x-hookledger-write-lsn'

/** How many tokens' last writes are remembered (the oldest forgotten first). */
const REMEMBERED_TOKENS = 10_000

/**
 * Read-your-writes over a replica. After a write by a token its LSN (the primary's WAL position
 * then) is remembered for the token, and answered in `x-hookledger-write-lsn` for a caller that
 * reads through another API process (it sends it back). A replica read by that token is served
 * by the replica only once it has replayed that far; otherwise by the primary. Exact, where a
 * time window would be a guess at the lag; the cost is one `pg_current_wal_lsn()` per write.
 */
export function createReplicaRouting(deps: OpDeps) {
  const replica = deps.readReplica ?? null
  const lastWrite = new Map<string, string>()
  return {
    /** The deps an operation runs with, and the headers its answer carries. */
    async depsFor(op: { name: string; http: { method: string } }, principal: Principal, askedLsn: string | undefined): Promise<{ deps: OpDeps; headers: Record<string, string> }> {
      if (!replica || !REPLICA_READ_OPS.has(op.name)) return { deps, headers: {} }
      const asked = askedLsn !== undefined && isLsn(askedLsn) ? askedLsn : null
      const mine = lastWrite.get(principal.id) ?? null
      const minLsn = asked ?? mine
      const position = await replica.position(minLsn).catch(() => null)
      // An unreachable or lagging replica: the primary answers (current, and no lag header).
      if (!position?.current) return { deps, headers: { 'x-hookledger-read-from': 'primary' } }
      // A second LSN (header and remembered): both must be replayed.
      if (asked !== null && mine !== null && asked !== mine && !(await replica.position(mine)).current) return { deps, headers: { 'x-hookledger-read-from': 'primary' } }
      return { deps: { ...deps, db: replica.db }, headers: { [REPLICA_LAG_HEADER]: String(position.lagMs), 'x-hookledger-read-from': 'replica' } }
    },
    /** After a write: remembers its LSN for the token; the header to answer with. */
    async afterWrite(op: { http: { method: string } }, principal: Principal): Promise<Record<string, string>> {
      if (!replica || op.http.method === 'GET') return {}
      const lsn = await replica.primaryLsn()
      lastWrite.delete(principal.id)
      lastWrite.set(principal.id, lsn)
      if (lastWrite.size > REMEMBERED_TOKENS) lastWrite.delete(lastWrite.keys().next().value!)
      return { [WRITE_LSN_HEADER]: lsn }
    },
  }
}
