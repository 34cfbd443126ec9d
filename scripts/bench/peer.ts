/**
 * Scenario `peer`: the same deliveries (100 events × 100 endpoints) drained by hookledger with
 * the settings `serve --role worker` uses when given none, and by graphile-worker with one
 * named queue per endpoint (see peer-graphile.ts), in the same run, same receiver, same signing.
 * The peer runs at hookledger's default concurrency (its own default is 1 job at a time) and its
 * default pool of 10 (hookledger's worker: 4). Goals: hookledger ≥ 3× the peer, and the default
 * drain ≥ 0.6 of the ceiling.
 */
import { ceilingAround } from './ceiling.js'
import { runDrain } from './drain-run.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { graphileDrain } from './peer-graphile.js'
import { cfg, targets } from './settings.js'
import { round } from './util.js'

export async function peerScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const ours = await runDrain(env, progress, { name: 'bench_peer_hookledger', events: cfg.peerEvents, settings: 'default' })
  const peerDb = await freshDatabase(env, 'bench_peer_graphile', 1, false)
  await peerDb.close()
  const peer = await graphileDrain(env, progress, { url: peerDb.url, endpoints: cfg.endpoints, events: cfg.peerEvents, concurrency: ours.concurrency })
  progress.phase('ceiling again, after both drains')
  const { ceiling } = await ceilingAround(env)
  const ratio = ours.perSec / peer.perSec
  const toCeiling = ours.perSec / ceiling
  return {
    metrics: {
      deliveries: ours.total,
      endpoints: cfg.endpoints,
      hookledger: { settings: 'serve --role worker defaults', concurrency: ours.concurrency, pool: 4, deliveries_per_sec: Math.round(ours.perSec), span_ms: ours.spanMs, claims: ours.claims, cpu: ours.cpu },
      graphile_worker: { queues: cfg.endpoints, concurrency: peer.concurrency, max_pool_size: peer.maxPoolSize, deliveries_per_sec: Math.round(peer.perSec), span_ms: Math.round(peer.spanMs), cpu: peer.cpu },
      hookledger_over_peer: round(ratio, 3),
      ceiling_per_sec: Math.round(ceiling),
      default_over_ceiling: round(toCeiling, 3),
    },
    rows: [
      { metric: `hookledger deliveries/s, default settings (concurrency ${ours.concurrency})`, value: String(Math.round(ours.perSec)), target: '—', pass: null },
      { metric: `graphile-worker deliveries/s (queue per endpoint, concurrency ${peer.concurrency})`, value: String(Math.round(peer.perSec)), target: '—', pass: null },
      { metric: 'hookledger ÷ graphile-worker', value: round(ratio, 2).toFixed(2), target: `≥ ${targets.peerRatio}`, pass: ratio >= targets.peerRatio },
      { metric: 'default-settings drain ÷ ceiling', value: round(toCeiling, 2).toFixed(2), target: `≥ ${targets.drainRatio}`, pass: toCeiling >= targets.drainRatio },
    ],
  }
}
