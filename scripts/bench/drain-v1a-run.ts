/**
 * The drain with v1a (ed25519) signatures vs v1 (HMAC) in the same run: the same 100 endpoints
 * × N events, each drain on a fresh database, once with every endpoint on `v1` and once on
 * `v1a`. In the full run v1 drains again after v1a and v1a is compared with the mean of the two
 * v1 drains, so warm-up and machine noise fall on both sides.
 *
 * Self-contained: bench.ts passes its helpers in (`V1aBenchDeps`), so this file does not depend
 * on how bench.ts is split.
 */
import { isCompletion } from './drain-diagnostics.js'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  generateV1aKeyPair,
  generateWebhookSecret,
  secretKeyId,
  signsV1a,
  systemClock,
  type SecretBox,
  type SignatureScheme,
} from '@hookledger/core'
import { endpointCreate, type Db } from '@hookledger/store'

interface Startable {
  start(): Promise<void>
  stop(): Promise<void>
  fanoutOnce(): Promise<{ enqueued: number }>
}

/** What the scenario needs from bench.ts. */
export interface V1aBenchDeps {
  readonly quick: boolean
  readonly owner: string
  readonly endpoints: number
  readonly events: number
  readonly secretBox: SecretBox
  readonly receiver: { url(path?: string): string; reset(): Promise<void>; waitFor(n: number, timeoutMs: number): Promise<number> }
  freshDatabase(name: string): Promise<{ db: Db; url: string; close(): Promise<void> }>
  publish(db: Db, owner: string, id: string): Promise<void>
  /** A dispatcher on `db` with the bench's transport, concurrency and notifier; `close` frees them. */
  newDispatcher(db: Db, url: string, workerId: string): { dispatcher: Startable; close(): Promise<void> }
}

interface Row {
  readonly metric: string
  readonly value: string
  readonly target: string
  readonly pass: boolean | null
}

/** One drain with every endpoint on `scheme`: deliveries/s from the first claim to the last settle. */
async function drainWith(deps: V1aBenchDeps, scheme: SignatureScheme, name: string): Promise<number> {
  const bdb = await deps.freshDatabase(name)
  const { db, url } = bdb
  const total = deps.endpoints * deps.events
  try {
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < deps.endpoints; i++) {
        const secret = generateWebhookSecret()
        const pair = signsV1a(scheme) ? generateV1aKeyPair() : null
        await endpointCreate(
          trx,
          { owner_id: deps.owner, now: systemClock.now(), actor: 'owner:bench' },
          {
            url: deps.receiver.url(`/ep/${i}`),
            description: 'bench',
            event_types: ['*'],
            embed_id: null,
            secret_sealed: deps.secretBox.seal(secret),
            secret_key_id: secretKeyId(secret),
            signature_scheme: scheme,
            v1a_key: pair && { sealed: deps.secretBox.seal(pair.secretKey), public_key: pair.publicKey },
          },
        )
      }
    })
    for (let i = 0; i < deps.events; i++) await deps.publish(db, deps.owner, `evt_${randomUUID().replaceAll('-', '')}`)
    const { dispatcher, close } = deps.newDispatcher(db, url, `bench-${name}`)
    try {
      const fan = await dispatcher.fanoutOnce()
      if (fan.enqueued !== total) throw new Error(`fan-out enqueued ${fan.enqueued}, expected ${total}`)
      await deps.receiver.reset()
      await dispatcher.start()
      await deps.receiver.waitFor(total, deps.quick ? 60_000 : 300_000)
      const completed = async () =>
        Number((await sql<{ n: string }>`select count(*) as n from deliveries where state = 'completed'`.execute(db)).rows[0]!.n)
      const deadline = Date.now() + 30_000
      while ((await completed()) < total) {
        if (Date.now() > deadline) throw new Error(`${name}: ${total} deliveries not all completed`)
        await new Promise((r) => setTimeout(r, 20))
      }
      await dispatcher.stop()
    } finally {
      await close()
    }
    const span = (
      await sql<{ first_claim: Date; last_settle: Date }>`
        select min(occurred_at) filter (where kind = 'delivery.claimed') as first_claim,
               max(occurred_at) filter (where ${isCompletion()}) as last_settle
        from ledger
      `.execute(db)
    ).rows[0]!
    return (total / Math.max(1, span.last_settle.getTime() - span.first_claim.getTime())) * 1000
  } finally {
    await bdb.close()
  }
}

/** The scenario: v1, v1a (and, in the full run, v1 again). */
export async function drainV1aScenario(deps: V1aBenchDeps): Promise<{ metrics: Record<string, unknown>; rows: Row[] }> {
  const v1 = await drainWith(deps, 'v1', 'bench_drain_v1')
  const v1a = await drainWith(deps, 'v1a', 'bench_drain_v1a')
  const v1Again = deps.quick ? null : await drainWith(deps, 'v1', 'bench_drain_v1_again')
  const v1Mean = v1Again === null ? v1 : (v1 + v1Again) / 2
  const ratio = v1a / v1Mean
  return {
    metrics: {
      deliveries: deps.endpoints * deps.events,
      v1_per_sec: Math.round(v1),
      v1a_per_sec: Math.round(v1a),
      ...(v1Again !== null && { v1_again_per_sec: Math.round(v1Again) }),
      v1a_over_v1: Math.round(ratio * 1000) / 1000,
    },
    rows: [
      { metric: 'deliveries/s, every endpoint v1 (HMAC)', value: String(Math.round(v1Mean)), target: '—', pass: null },
      { metric: 'deliveries/s, every endpoint v1a (ed25519)', value: String(Math.round(v1a)), target: '—', pass: null },
      { metric: `drain v1a ÷ v1 (${v1Again === null ? 'one v1 drain' : 'mean of the v1 drains before and after'})`, value: ratio.toFixed(2), target: '—', pass: null },
    ],
  }
}
