import { sql } from 'kysely'
import { migrationsPending, type Db } from '@hookledger/store'

/** One check of `/readyz`. */
export interface ReadinessCheck {
  readonly ok: boolean
  readonly detail?: string
}

export interface Readiness {
  readonly ok: boolean
  readonly checks: Record<string, ReadinessCheck>
}

/** How long the database may take to answer `select 1` before it counts as unreachable. */
export const READINESS_DATABASE_TIMEOUT_MS = 1_500
/** The producer loop passes at least every poll interval or outage back-off (≤ 5 s); silence this long means it is stuck. */
export const READINESS_LOOP_STALE_MS = 30_000

const within = <T>(ms: number, p: Promise<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    p.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)))
  })

/**
 * `/readyz`: whether this process can do its job now — the database answers (within 1.5 s, so a
 * partition fails the check instead of hanging it), its schema is current, and, in a worker role,
 * the dispatcher's producer loop is alive. Each check is reported by name.
 */
export function createReadiness(options: { db: Db; dispatcher?: { readonly msSinceLastPass: number } | null }): () => Promise<Readiness> {
  let migrated = false
  return async () => {
    const checks: Record<string, ReadinessCheck> = {}
    try {
      await within(READINESS_DATABASE_TIMEOUT_MS, sql`select 1`.execute(options.db))
      checks.database = { ok: true }
    } catch (err) {
      checks.database = { ok: false, detail: (err as Error).message }
    }
    if (!migrated && checks.database.ok) {
      try {
        const pending = await within(READINESS_DATABASE_TIMEOUT_MS, migrationsPending(options.db))
        migrated = pending.length === 0
        checks.migrations = migrated ? { ok: true } : { ok: false, detail: `pending: ${pending.join(', ')}` }
      } catch (err) {
        checks.migrations = { ok: false, detail: (err as Error).message }
      }
    } else {
      checks.migrations = migrated ? { ok: true } : { ok: false, detail: 'not checked: the database is unreachable' }
    }
    if (options.dispatcher) {
      const ms = options.dispatcher.msSinceLastPass
      checks.dispatcher = ms < READINESS_LOOP_STALE_MS ? { ok: true } : { ok: false, detail: `no producer pass for ${Number.isFinite(ms) ? Math.round(ms / 1000) + ' s' : 'ever (stopped)'}` }
    }
    return { ok: Object.values(checks).every((c) => c.ok), checks }
  }
}
