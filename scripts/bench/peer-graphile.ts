/**
 * The peer: graphile-worker (a PostgreSQL job queue) doing the drain's deliveries. One named
 * queue per endpoint, so it too keeps one delivery in flight per endpoint; each job signs and
 * POSTs through the same executeDelivery (Standard Webhooks signing, guarded transport) to the
 * same receiver process. Its own schema in its own database of the same cluster; the jobs are
 * all added before it starts, as the drain's deliveries are all fanned out before the drain.
 * The rate is the first job's start → the queue empty (polled every 10 ms).
 */
import { Logger, makeWorkerUtils, run, type AddJobsJobSpec } from 'graphile-worker'
import pg from 'pg'
import { systemClock } from '@hookledger/core'
import type { ClaimedDelivery } from '@hookledger/store'
import { executeDelivery, rememberingSecretBox } from '@hookledger/worker'
import { syntheticClaims } from './ceiling.js'
import { newTransport } from './fixtures.js'
import type { Env } from './harness.js'
import { EVENT_TYPE, QUICK } from './settings.js'
import { sleep, until, type Progress } from './util.js'

const silent = new Logger(() => () => {})

export interface PeerResult {
  readonly total: number
  readonly perSec: number
  readonly spanMs: number
  readonly concurrency: number
  readonly maxPoolSize: number
  readonly cpu: Record<string, number>
}

export async function graphileDrain(
  env: Env,
  progress: Progress,
  params: { url: string; endpoints: number; events: number; concurrency: number },
): Promise<PeerResult> {
  const { url, endpoints, events, concurrency } = params
  const total = endpoints * events
  const maxPoolSize = 10 // graphile-worker's default
  const utils = await makeWorkerUtils({ connectionString: url, logger: silent })
  const transport = newTransport(env)
  const claims = syntheticClaims(env, endpoints)
  // The same client stack as the worker's, the box that remembers opened secrets included.
  const deps = { clock: systemClock, transport, secretBox: rememberingSecretBox(env.secretBox), actor: 'worker:graphile' }
  const count = new pg.Client({ connectionString: url })
  await count.connect()
  let firstStart = 0
  let failed = ''
  try {
    progress.phase(`graphile-worker: schema and ${total} jobs on ${endpoints} named queues`)
    await utils.migrate()
    const specs: AddJobsJobSpec[] = []
    for (let e = 0; e < events; e++) {
      for (let i = 0; i < endpoints; i++) {
        specs.push({ identifier: 'deliver', payload: { endpoint: i, event: `evt_peer_${e}` }, queueName: `endpoint_${i}` })
      }
    }
    for (let i = 0; i < specs.length; i += 1_000) await utils.addJobs(specs.slice(i, i + 1_000))
    const deliver = async (payload: unknown) => {
      firstStart ||= performance.now()
      const { endpoint, event } = payload as { endpoint: number; event: string }
      const base = claims[endpoint]!
      const claim: ClaimedDelivery = {
        endpoint: base.endpoint,
        event: { ...base.event, id: event, subject: `booking://${event}`, type: EVENT_TYPE, data: { booking_id: event } },
        delivery: { ...base.delivery, event_id: event },
      }
      const s = await executeDelivery(claim, deps)
      if (s.outcome.type !== 'completed') {
        failed ||= `a peer delivery ended ${s.outcome.type}`
        throw new Error(failed)
      }
    }
    await env.receiver.reset()
    env.cpu.start()
    const remaining = async () => Number((await count.query('select count(*) as n from graphile_worker._private_jobs')).rows[0].n)
    progress.phase(`graphile-worker: draining ${total} jobs at concurrency ${concurrency}`, async () => `${await remaining()} jobs left`)
    const runner = await run({ connectionString: url, concurrency, maxPoolSize, noHandleSignals: true, logger: silent, taskList: { deliver } })
    try {
      await until('the graphile-worker queue to empty', QUICK ? 60_000 : 300_000, async () => ((await remaining()) === 0 ? true : null), 10)
    } finally {
      await runner.stop()
    }
    const end = performance.now()
    const cpu = env.cpu.stop()
    if (failed) throw new Error(failed)
    await sleep(50)
    const { count: received } = await env.receiver.call('count')
    if (received !== total) throw new Error(`receiver saw ${String(received)} requests for ${total} peer jobs`)
    const spanMs = Math.max(1, end - firstStart)
    return { total, perSec: (total / spanMs) * 1000, spanMs, concurrency, maxPoolSize, cpu }
  } finally {
    await count.end()
    await utils.release()
    await transport.close()
  }
}
