import { sql } from 'kysely'
import type { Db } from './database.js'

/** Where a replica is, against what a caller last wrote. */
export interface ReplicaPosition {
  /** How far behind the primary its replay is (0 when it has replayed all it received). */
  readonly lagMs: number
  /** Whether it has replayed `minLsn` (true when none was asked for). */
  readonly current: boolean
}

/**
 * A streaming replica the read-heavy operations may read (HOOKLEDGER_READ_DATABASE_URL), and
 * the two LSN questions that keep a caller's reads after its own writes current: where the
 * primary's WAL is now (taken after a write), and whether the replica has replayed that far.
 */
export interface ReadReplica {
  readonly db: Db
  position(minLsn: string | null): Promise<ReplicaPosition>
  /** The primary's WAL position now: every commit before this call is at or before it. */
  primaryLsn(): Promise<string>
}

const LSN = /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i

/** True for a `pg_lsn` text (`16/B374D848`), the form an LSN travels in a header. */
export function isLsn(text: string): boolean {
  return LSN.test(text)
}

export function createReadReplica(replica: Db, primary: Db): ReadReplica {
  const primaryLsn = async () => (await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(primary)).rows[0]!.lsn
  return {
    db: replica,
    async position(minLsn) {
      // Behind is judged against the primary, not against what the replica happened to receive:
      // a replica cut off from its primary has replayed all it received and is still stale. Caught
      // up to the primary's WAL position of a moment ago: 0; else the time since the last commit it
      // replayed (what its answers may be missing, at most).
      const now = await primaryLsn()
      const { rows } = await sql<{ caught_up: boolean | null; since_ms: number | null; current: boolean | null }>`
        select pg_last_wal_replay_lsn() >= ${now}::pg_lsn as caught_up,
               floor(extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8 as since_ms,
               ${minLsn === null ? sql`true` : sql`coalesce(pg_last_wal_replay_lsn() >= ${minLsn}::pg_lsn, true)`} as current
      `.execute(replica)
      const row = rows[0]
      const lagMs = row?.caught_up !== false ? 0 : Math.max(1, Number(row?.since_ms ?? 0))
      return { lagMs, current: row?.current !== false }
    },
    primaryLsn,
  }
}
