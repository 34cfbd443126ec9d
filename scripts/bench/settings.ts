/**
 * The bench's command line, scale and targets: read once here, so every scenario file sees the
 * same settings. `--quick` scales every count by 1/50 (a smoke test inside `npm test`).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
export const QUICK = argv.includes('--quick')
export const ONLY =
  argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',') ?? null
/** Diagnostics: load pg_stat_statements and print the drain's top statements. */
export const STATS = argv.includes('--stats')
/** Diagnostics: CPU-profile this process during the drain into bench-results/drain.cpuprofile, and `serve-drain`'s service into serve-drain.cpuprofile. */
export const PROFILE = argv.includes('--profile')
/** Diagnostics: auto_explain statements slower than this many ms into bench-results/explain.log. */
export const EXPLAIN_MS = argv.find((a) => a.startsWith('--explain='))?.slice('--explain='.length) ?? null
/** The in-process service's connections prepare repeated statements, as the service's do by default; `--no-prepare` for an A/B. */
export const PREPARE = !argv.includes('--no-prepare')
/** Diagnostics: print where the replay of the drain's ledger spends its time. */
export const REPLAY_PHASES = argv.includes('--replay-phases')
/** Also write the SVG charts here (relative to the checkout), e.g. `--charts=docs/bench` after a full run. */
export const CHARTS_DIR = argv.find((a) => a.startsWith('--charts='))?.slice('--charts='.length) ?? null
/** `--soak=SECONDS`: run the soak scenario (null: not asked for; at least 10 s). */
export const SOAK_SECONDS = (() => {
  const v = argv.find((a) => a.startsWith('--soak='))?.slice('--soak='.length)
  return v === undefined ? null : Math.max(10, Number(v) || 0)
})()
/** `--soak-rate=N` deliveries/s (null: 70 % of this run's drain). */
export const SOAK_RATE = (() => {
  const n = Number(argv.find((a) => a.startsWith('--soak-rate='))?.slice('--soak-rate='.length))
  return Number.isFinite(n) && n > 0 ? n : null
})()
export const SCALE = QUICK ? 1 / 50 : 1
export const scaled = (n: number, min = 1) => Math.max(min, Math.round(n * SCALE))

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const RESULTS_DIR = path.join(ROOT, 'bench-results')

/** PostgreSQL settings beyond the library defaults. Durability stays on (production-like). */
export const PG_SETTINGS: Record<string, string> = {
  max_connections: '100',
  // Keep the cluster's noise out of the measurements: no statement/connection logging.
  log_min_messages: 'warning',
  ...(STATS || EXPLAIN_MS
    ? {
        shared_preload_libraries: [STATS ? 'pg_stat_statements' : '', EXPLAIN_MS ? 'auto_explain' : '']
          .filter(Boolean)
          .join(','),
        // track all: the statements inside the write functions are counted on their own too.
        ...(STATS ? { 'pg_stat_statements.track_planning': 'on', 'pg_stat_statements.track': 'all' } : {}),
      }
    : {}),
  ...(EXPLAIN_MS
    ? {
        'auto_explain.log_min_duration': `${EXPLAIN_MS}ms`,
        'auto_explain.log_analyze': 'on',
        'auto_explain.log_buffers': 'on',
        'auto_explain.log_nested_statements': 'on',
        // A stall may be a wait, not a plan: name lock waits past a second too.
        log_lock_waits: 'on',
        log_autovacuum_min_duration: '0',
        log_min_messages: 'info',
      }
    : {}),
}

export const POOL_SIZE = 4
export const OWNER = 'bench'
export const EVENT_TYPE = 'booking.created'
/** The sealer's default interval (HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS). */
export const CHECKPOINT_INTERVAL_MS = 1_000

export const cfg = {
  // ceiling / drain: 200 events × 100 endpoints = 20,000 deliveries.
  endpoints: 100,
  drainEvents: scaled(200, 2),
  concurrency: 100,
  ceilingRequests: scaled(20_000, 500),
  // latency: 200 events/s for 30 s, each to one of 50 endpoints (one per tenant).
  latencyEndpoints: 50,
  latencyRate: 200,
  latencySeconds: 30 * SCALE,
  // latency-owners: the same rate to 2,000 tenants (one endpoint each).
  latencyOwners: scaled(2_000, 100),
  // claim: one batch claim of 64 with 10k vs 1M due (+100k completed beside them).
  claimLimit: 64,
  claimEndpoints: 100,
  claimSmall: scaled(10_000, 500),
  claimLarge: scaled(1_000_000, 1_000),
  claimCompleted: scaled(100_000, 100),
  claimRuns: QUICK ? 5 : 9,
  // claim-endpoints: the same claim with 100 endpoints and with 1,000,000 (999,900 idle, 10,000
  // of them soft-deleted; created in SQL in ~25 s), claimed in turn: claimManyRuns pairs.
  claimManyEndpoints: scaled(1_000_000, 500),
  claimDeletedEndpoints: scaled(10_000, 10),
  claimManyRuns: QUICK ? 3 : 15,
  // drain-owners: 10 events to each of 2,000 endpoints, of one owner and then of 2,000.
  ownersDrainEndpoints: scaled(2_000, 40),
  ownersDrainEvents: scaled(10, 2),
  // drain-idle: 100 busy endpoints drained with 10,000 idle ones (other tenants) beside them.
  idleDrainEvents: scaled(100, 2),
  idleEndpoints: scaled(10_000, 200),
  // fanout: one event to 1,000 endpoints (through the dispatcher), and to 10,000 (fanoutRun).
  fanoutEndpoints: scaled(1_000, 10),
  fanoutWideEndpoints: scaled(10_000, 200),
  fanoutRuns: 3,
  // publish-http: POST /api/events through the real API, this many at a time.
  publishEvents: scaled(2_000, 100),
  publishInFlight: 16,
  // peer: the same deliveries through hookledger (default settings) and graphile-worker.
  peerEvents: scaled(100, 2),
  // history: completed deliveries already in the ledger and the projection.
  historyDeliveries: QUICK ? 20_000 : 1_000_000,
  historyLookups: 50,
  // fairness: a quiet owner (20 events/s to 5 endpoints) alone, then while another floods
  // 100 events × 2,000 endpoints (200,000 deliveries) answering in 200 ms.
  fairFloodEndpoints: scaled(2_000, 100),
  fairFloodEvents: scaled(100, 20),
  fairSlowMs: 200,
  fairQuietRate: 20,
  // fairness-owners: the quiet side 2,000 owners, one endpoint each.
  fairQuietOwners: scaled(2_000, 100),
  // Each phase: 800 quiet deliveries, so its p99 is the 8th slowest (at 20 s it was the 4th, and
  // the ratio moved 2.0–4.0 between runs of the same code).
  fairSeconds: QUICK ? 2 : 40,
}

export const targets = {
  // Issue 21's targets (the delivery cycle at the machine's limit), judged in one full run.
  drainRatio: 0.75,
  drainPerSec: 1_000,
  latencyP50: 8,
  latencyP99: 30,
  // latency-owners: p99 at 2,000 owners ÷ at 50.
  latencyOwnersP99Ratio: 1.5,
  // drain-owners: the drain across 2,000 owners ÷ the same endpoints of one.
  ownersDrainRatio: 0.9,
  claimGrowth: 2,
  // The claim at 1,000,000 endpoints ÷ at 100 (issue 21): the claim reads ready queue heads only.
  claimEndpointsGrowth: 1.25,
  // Ledger, projections and their indexes, a completed delivery.
  footprintBytes: 1_280,
  replayRowsPerSec: 50_000,
  fanoutMs: 1_000,
  idleDrainRatio: 0.9,
  // `serve --role worker` at its defaults ÷ the in-process drain, both with the fan-out.
  serveDrainRatio: 0.9,
  // The drain with 300 ledger partitions against 10: the write path must not probe partitions.
  partitionsDrainRatio: 0.9,
  // Default settings ÷ graphile-worker doing the same work in the same run.
  peerRatio: 5,
  attemptHistoryMs: 10,
  // A quiet owner's publish → arrival p99 while another floods ÷ alone (issue 24).
  fairnessP99Ratio: 1.5,
  // One rate-limited endpoint's arrivals/s under a backlog and four workers, off its limit by at most.
  rateLimitTolerance: 0.05,
  // An owner's publish limit under more clients than it admits: accepted/s off the limit by at most.
  ownerLimitTolerance: 0.05,
}
