/**
 * Whether a statement would route to one shard on a database distributed by `owner_id`
 * (docs/scaling.md): it names one owner — a `hookledger_*` write function called with a real
 * owner as its first argument, or an `owner_id = $n` predicate whose value is one owner — or it
 * spans owners. Statements that touch no table (transaction control, the clock) are neither.
 * Read by the test that keeps the sharding plan checkable (owner-routing.int.spec.ts).
 */

export interface RecordedStatement {
  readonly text: string
  readonly values: readonly unknown[]
}

export type OwnerRouting = 'one-owner' | 'cross-owner' | 'no-table'

const NO_TABLE = /^\s*(begin|commit|rollback|set |savepoint|release|show |select\s+(clock_timestamp|now|pg_|1\b|txid_|current_))/i
const TOUCHES_TABLE = /\b(from|into|update|join)\s+"?[a-z_]+|hookledger_[a-z_]+\s*\(/i

export function judgeStatement(statement: RecordedStatement, owners: readonly string[]): { routing: OwnerRouting } {
  const { text, values } = statement
  if (NO_TABLE.test(text) || !TOUCHES_TABLE.test(text)) return { routing: 'no-table' }
  const valueOf = (n: string) => values[Number(n) - 1]
  const isOwner = (v: unknown) => typeof v === 'string' && owners.includes(v)
  const fn = /hookledger_[a-z_]+\s*\(\s*\$(\d+)/i.exec(text)
  if (fn && isOwner(valueOf(fn[1]!))) return { routing: 'one-owner' }
  for (const m of text.matchAll(/owner_id"?\s*=\s*\$(\d+)/gi)) {
    if (isOwner(valueOf(m[1]!))) return { routing: 'one-owner' }
  }
  return { routing: 'cross-owner' }
}
