/**
 * `npm run bench [-- --quick]`: throughput, latency and scale of the real delivery path, each
 * measured against this machine's own limit in the same run.
 *
 * One embedded PostgreSQL (a throwaway cluster under os.tmpdir(), production durability:
 * fsync, synchronous_commit and full_page_writes stay on; stock settings otherwise) and one
 * loopback receiver in a separate process (scripts/bench-receiver.mjs: answers 204, counts,
 * reports arrival times). Each scenario gets a fresh database in that cluster, migrated with the
 * real migrations, and drives the real store, dispatcher and HTTP transport. One file per
 * scenario under scripts/bench/ (the harness: harness.ts); in the order they run:
 *
 *   ceiling          the HTTP client stack alone (executeDelivery: sign + guarded transport), no DB
 *   drain            20,000 deliveries (200 events x 100 endpoints) published and fanned out, drained
 *   footprint        bytes per completed delivery after the drain; ledger rows per delivery
 *   replay           ledgerReplayVerify over the drain's ledger (must find no difference)
 *   seal             the sealer over the drain's whole ledger; ledger verify --chain-only
 *   drain-sealed     the drain with the sealer at its default interval
 *   drain-off        the drain, chain off again (full run only): chain on ÷ off
 *   drain-v1a        the drain with every endpoint on v1a (ed25519) vs v1 (HMAC), same run
 *   latency          200 events/s for 30 s, one endpoint each (50 endpoints): publish -> arrival
 *   latency-owners   the same to 2,000 owners, every one recent in fair share: p99 ÷ latency's
 *   soak             only with --soak=SECONDS: 70 % of the drain rate, sizes/dead tuples/p99 sampled
 *   claim            one claim of 64 with 10k vs 1M due deliveries (+100k completed), synthetic rows
 *   claim-endpoints  one claim of 64 at 100 endpoints vs 100,000 (99,900 idle, 1,000 deleted)
 *   drain-idle       10,000 deliveries to 100 endpoints, with 10,000 idle endpoints beside vs without
 *   drain-owners     20,000 deliveries to 2,000 endpoints, each its own owner's vs all of one owner
 *   drain-partitions the same drain with 10 ledger partitions vs 300 (the write path must not probe them)
 *   fanout           one event to 1,000 endpoints: publish -> deliveries committed (their NOTIFY)
 *   fanout-wide      one event to 10,000 endpoints: the fan-out transaction
 *   publish-http     POST /api/events through the real API (serve --role api): events/s
 *   publish-many     10,000 events by @hookledger/publisher's publishMany in one transaction
 *   peer             the same deliveries, hookledger at default settings vs graphile-worker
 *   rate-limit       one endpoint limited to 50/s, a 10,000-event backlog, four workers: arrivals/s
 *   owner-limits     an owner limited to 200 events/s under 16 clients through the API (429s, the
 *                    owner beside it), and a limit never reached: publish/s ÷ unlimited
 *   fairness         a quiet owner's publish -> arrival alone vs while another floods 200,000
 *                    deliveries to 2,000 endpoints answering in 200 ms (fair share across owners)
 *   fairness-owners  the same flood beside 2,000 quiet owners sharing the 20 events/s: the flood's rate
 *   history          1,000,000 completed deliveries in history (quick: 20,000): claim, one
 *                    delivery's attempt history, disk per delivery
 *
 * `--quick` runs every scenario at 1/50 scale (a smoke test for `npm test`); the process exits
 * non-zero if a scenario errors, never because it is slow. `--only=drain,latency` picks
 * scenarios (footprint, replay and seal need drain). Prints one JSON line per scenario as it
 * finishes and a table at the end; writes everything to bench-results/latest.json. Progress
 * goes to stderr.
 *
 * Diagnostics: `--stats` (pg_stat_statements top statements of the drain, `serve-drain`,
 * `fanout-wide`, `latency`'s measured phase and `fairness`'s flood), `--explain=<ms>`
 * (auto_explain of slower statements into bench-results/explain.log), `--profile` (CPU profile
 * of this process during the drain into bench-results/drain.cpuprofile, during `latency` and
 * `fairness`'s flood into latency.cpuprofile and fairness-flood.cpuprofile, and of
 * `serve-drain`'s service into serve-drain.cpuprofile), `--replay-phases`; `--no-prepare` (A/B:
 * the service without prepared statements, HOOKLEDGER_DB_PREPARED_STATEMENTS=off).
 */
import { ceilingScenario } from './bench/ceiling.js'
import { claimScenario } from './bench/claim-backlog.js'
import { claimEndpointsScenario } from './bench/claim-endpoints.js'
import { drainIdleScenario } from './bench/drain-idle.js'
import { drainOwnersScenario } from './bench/drain-owners.js'
import { drainPartitionsScenario } from './bench/drain-partitions.js'
import { drainOffScenario, drainScenario, drainSealedScenario } from './bench/drain.js'
import { drainV1a } from './bench/drain-v1a.js'
import { fanoutScenario } from './bench/fanout.js'
import { fanoutWideScenario } from './bench/fanout-wide.js'
import { fairnessOwnersScenario, fairnessScenario } from './bench/fairness.js'
import { rateLimitScenario } from './bench/rate-limit.js'
import { ownerLimitsScenario } from './bench/owner-limits.js'
import { footprintScenario } from './bench/footprint.js'
import { benchRun, runScenario } from './bench/harness.js'
import { historyScenario } from './bench/history.js'
import { latencyOwnersScenario, latencyScenario } from './bench/latency.js'
import { peerScenario } from './bench/peer.js'
import { publishHttpScenario } from './bench/publish-http.js'
import { publishManyScenario } from './bench/publish-many.js'
import { replayScenario } from './bench/replay.js'
import { sealScenario } from './bench/seal.js'
import { serveDrainScenario } from './bench/serve-drain.js'
import { soakScenario } from './bench/soak.js'
import { QUICK, SOAK_SECONDS } from './bench/settings.js'
import { shared } from './bench/shared.js'

const code = await benchRun(async (env) => {
  await runScenario(env, 'ceiling', ceilingScenario)
  await runScenario(env, 'drain', drainScenario)
  await runScenario(env, 'footprint', footprintScenario)
  await runScenario(env, 'replay', replayScenario)
  await runScenario(env, 'seal', sealScenario)
  await shared.drain?.close()
  await runScenario(env, 'drain-sealed', drainSealedScenario)
  // At 1/50 scale the on ÷ off ratio is noise: the quick run keeps the chain-on drain (it
  // exercises the sealer) and skips the second chain-off one.
  if (!QUICK) await runScenario(env, 'drain-off', drainOffScenario)
  await runScenario(env, 'drain-v1a', drainV1a)
  await runScenario(env, 'latency', latencyScenario)
  await runScenario(env, 'latency-owners', latencyOwnersScenario)
  await runScenario(env, 'claim', claimScenario)
  await runScenario(env, 'claim-endpoints', claimEndpointsScenario)
  await runScenario(env, 'drain-idle', drainIdleScenario)
  await runScenario(env, 'drain-owners', drainOwnersScenario)
  await runScenario(env, 'drain-partitions', drainPartitionsScenario)
  await runScenario(env, 'fanout', fanoutScenario)
  await runScenario(env, 'fanout-wide', fanoutWideScenario)
  await runScenario(env, 'publish-http', publishHttpScenario)
  await runScenario(env, 'publish-many', publishManyScenario)
  await runScenario(env, 'peer', peerScenario)
  await runScenario(env, 'serve-drain', serveDrainScenario)
  await runScenario(env, 'rate-limit', rateLimitScenario)
  await runScenario(env, 'owner-limits', ownerLimitsScenario)
  await runScenario(env, 'fairness', fairnessScenario)
  await runScenario(env, 'fairness-owners', fairnessOwnersScenario)
  await runScenario(env, 'history', historyScenario)
  // Only when asked (--soak=SECONDS): an hour is outside any test run.
  if (SOAK_SECONDS !== null) await runScenario(env, 'soak', soakScenario)
}).catch((err: unknown) => {
  process.stderr.write(`[bench] fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  return 1
})
process.exit(code)
