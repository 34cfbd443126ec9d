/**
 * Scenario `ceiling`: the same HTTP client stack as a delivery (executeDelivery: sign, guarded
 * transport, classify), no database — what this machine can send, so every drain is judged
 * against it. Also the synthetic claims the graphile-worker peer sends with.
 */
import {
  JOB_TIMEOUT_MS,
  generateWebhookSecret,
  secretKeyId,
  systemClock,
} from '@hookledger/core'
import { deliveryRowFixture, endpointRowFixture } from '@hookledger/testkit/row-fixtures'
import type { ClaimedDelivery } from '@hookledger/store'
import { executeDelivery, rememberingSecretBox } from '@hookledger/worker'
import { newTransport } from './fixtures.js'
import type { Env, ScenarioContext, ScenarioOutput } from './harness.js'
import { EVENT_TYPE, OWNER, cfg } from './settings.js'
import { shared } from './shared.js'

/** `n` claims as the claim would return them, one per endpoint `/ep/<i>` of the receiver. */
export function syntheticClaims(env: Env, n: number): ClaimedDelivery[] {
  const t = new Date()
  return Array.from({ length: n }, (_, i) => {
    const secret = generateWebhookSecret()
    const endpoint = endpointRowFixture({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      owner_id: OWNER,
      url: env.receiver.url(`/ep/${i}`),
      secret_sealed: env.secretBox.seal(secret),
      secret_key_id: secretKeyId(secret),
      created_at: t,
    })
    const eventId = `evt_ceiling_${i}`
    return {
      endpoint,
      event: {
        id: eventId,
        type: EVENT_TYPE,
        subject: `booking://${eventId}`,
        occurred_at: t,
        data: { booking_id: eventId },
      },
      delivery: deliveryRowFixture({
        id: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`,
        owner_id: OWNER,
        endpoint_id: endpoint.id,
        event_id: eventId,
        event_type: EVENT_TYPE,
        state: 'running',
        run_started_at: t,
        next_attempt_at: t,
        claimed_by: 'worker:ceiling',
        lease_until: new Date(t.getTime() + JOB_TIMEOUT_MS),
        created_at: t,
        updated_at: t,
      }),
    }
  })
}

/** `total` requests through executeDelivery (sign + guarded transport + classify), `c` at a time. */
export async function ceilingRun(env: Env, total: number, c: number) {
  const transport = newTransport(env)
  const claims = syntheticClaims(env, c)
  // The worker's box, which remembers the secrets it opened (remembered-secrets.ts).
  const deps = { clock: systemClock, transport, secretBox: rememberingSecretBox(env.secretBox), actor: 'worker:ceiling' }
  let next = 0
  let failed = 0
  const worker = async (slot: number) => {
    while (next < total) {
      next++
      const s = await executeDelivery(claims[slot]!, deps)
      if (s.outcome.type !== 'completed') failed++
    }
  }
  try {
    // Warm-up: open the keep-alive sockets and let the JIT settle.
    for (let round = 0; round < 10; round++) {
      await Promise.all(Array.from({ length: c }, (_, i) => executeDelivery(claims[i]!, deps)))
    }
    await env.receiver.reset()
    env.cpu.start()
    const started = performance.now()
    await Promise.all(Array.from({ length: c }, (_, i) => worker(i)))
    const ms = performance.now() - started
    const cpu = env.cpu.stop()
    await env.receiver.waitFor(total, 5_000)
    return { perSec: (total / ms) * 1000, ms, failed, cpu }
  } finally {
    await transport.close()
  }
}

export async function ceilingScenario({ env }: ScenarioContext): Promise<ScenarioOutput> {
  const total = cfg.ceilingRequests
  const c = cfg.concurrency
  const r = await ceilingRun(env, total, c)
  if (r.failed > 0) throw new Error(`${r.failed} ceiling requests did not complete`)
  shared.ceilingPerSec = r.perSec
  return {
    metrics: { requests: total, concurrency: c, ms: Math.round(r.ms), requests_per_sec: Math.round(r.perSec), cpu: r.cpu },
    rows: [{ metric: 'requests/s (HTTP client stack, no database)', value: String(Math.round(r.perSec)), target: '—', pass: null }],
  }
}

/**
 * The ceiling again, right after a drain. The machine is shared and noisy: a drain divides by
 * the mean of the run's first ceiling and this one, so both sides of the ratio saw the same
 * conditions.
 */
export async function ceilingAround(env: Env): Promise<{ before: number; after: number; ceiling: number }> {
  const before = shared.ceilingPerSec ?? NaN
  const after = (await ceilingRun(env, cfg.ceilingRequests, cfg.concurrency)).perSec
  return { before, after, ceiling: Number.isNaN(before) ? after : (before + after) / 2 }
}
