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
  return {
    db: replica,
    async position(minLsn) {
      // Caught up (all received WAL replayed): 0, not the time since the last commit it replayed.
      const { rows } = await sql<{ lag_ms: number | null; current: boolean | null }>`
        select case when pg_last_wal_receive_lsn() is null or pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
                    else floor(extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000) end::float8 as lag_ms,
               ${minLsn === null ? sql`true` : sql`coalesce(pg_last_wal_replay_lsn() >= ${minLsn}::pg_lsn, true)`} as current
      `.execute(replica)
      return { lagMs: Math.max(0, Number(rows[0]?.lag_ms ?? 0)), current: rows[0]?.current !== false }
    },
    async primaryLsn() {
      const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(primary)
      return rows[0]!.lsn
    },
  }
}
