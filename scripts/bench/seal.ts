/**
 * Bench scenario `seal`: how fast the sealer extends the hash chain and signs checkpoints, over
 * the drain's whole ledger at once (the worst case: a sealer that fell far behind), and how
 * long `ledger verify --chain-only` then takes over the same rows.
 */
import { parseLedgerPublicKey, ledgerChainVerify, ledgerSeal } from '@hookledger/ledger'
import type { ScenarioContext, ScenarioOutput } from './harness.js'
import { QUICK } from './settings.js'
import { shared } from './shared.js'

export async function sealScenario({ env }: ScenarioContext): Promise<ScenarioOutput> {
  if (!shared.drain) throw new Error('needs the drain scenario')
  const { db } = shared.drain
  const key = env.ledgerKey
  const quick = QUICK
  const started = performance.now()
  // The quick run seals in small checkpoints, so even a smoke test crosses checkpoint boundaries.
  const sealed = await ledgerSeal(db, { key, now: new Date(), ...(quick ? { maxRows: 1000 } : {}) })
  const sealMs = performance.now() - started
  const verifyStarted = performance.now()
  const verified = await ledgerChainVerify(db, { publicKey: parseLedgerPublicKey(key.publicKey) })
  const verifyMs = performance.now() - verifyStarted
  if (!verified.ok) throw new Error(`the chain over the drain does not verify: ${JSON.stringify(verified.problems.slice(0, 3))}`)
  const sealRate = (sealed.rows / Math.max(1, sealMs)) * 1000
  const verifyRate = (verified.rows / Math.max(1, verifyMs)) * 1000
  return {
    metrics: {
      rows: sealed.rows,
      checkpoints: sealed.checkpoints.length,
      seal_ms: Math.round(sealMs),
      seal_rows_per_sec: Math.round(sealRate),
      verify_ms: Math.round(verifyMs),
      verify_rows_per_sec: Math.round(verifyRate),
      quick,
    },
    rows: [
      { metric: 'sealing: ledger rows/s (chain + the log\'s tree and tiles + signed notes)', value: String(Math.round(sealRate)), target: quick ? '—' : '≥ 50,000', pass: quick ? null : sealRate >= 50_000 },
      { metric: 'ledger verify --chain-only: rows/s', value: String(Math.round(verifyRate)), target: '—', pass: null },
      { metric: 'checkpoints to seal the drain', value: String(sealed.checkpoints.length), target: '—', pass: null },
    ],
  }
}
