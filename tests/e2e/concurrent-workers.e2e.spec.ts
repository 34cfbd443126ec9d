import { afterAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { eventInsert } from '@hookledger/store'
import { eventually, TestReceiver, testDatabase } from '@hookledger/testkit'
import { runCli, startServe } from './cli-process.js'
import { createEndpoint, publish } from './worker-fixtures.js'

describe('three worker processes, one endpoint', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {})
  })

  it('never sends two requests at once, delivers each event once, and survives a SIGKILL mid-POST', async () => {
    const database = await testDatabase()
    cleanups.push(() => database.close())
    const key = generateMasterKey()
    const env = {
      DATABASE_URL: database.url,
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(key),
      HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
      // Lease = job timeout + 2 s: the killed worker's delivery is rescued 4 s after its claim.
      HOOKLEDGER_JOB_TIMEOUT_SECONDS: '2',
      HOOKLEDGER_MAINTENANCE_INTERVAL_SECONDS: '1',
      LOG_LEVEL: 'warn',
    }
    const receiver = await new TestReceiver({ status: 204, delayMs: 2 }).start()
    cleanups.push(() => receiver.close())
    // A second endpoint whose first request hangs: the worker holding it is killed meanwhile,
    // and its rescue (lease, then the 5 s backoff) runs while the first endpoint drains.
    let hangOnce = true
    const hanging = await new TestReceiver(() => {
      if (hangOnce) {
        hangOnce = false
        return { status: 204, delayMs: 120_000 }
      }
      return { status: 204 }
    }).start()
    cleanups.push(() => hanging.close())

    const endpoint = await createEndpoint(database.db, key, receiver.url(), ['booking.created'])
    await createEndpoint(database.db, key, hanging.url(), ['booking.cancelled'])

    const workers = await Promise.all([1, 2, 3].map(() => startServe(['--role', 'worker'], env)))
    cleanups.push(async () => {
      for (const w of workers) {
        try {
          process.kill(w.pid, 'SIGTERM')
        } catch {
          // already gone
        }
      }
      await Promise.all(workers.map((w) => w.exit))
    })

    // SIGKILL the worker that holds evt_hang mid-POST.
    await publish(database.db, 'evt_hang', 'booking.cancelled')
    await hanging.waitFor(1, 30_000)
    const running = await database.db
      .selectFrom('deliveries')
      .select(['id', 'claimed_by'])
      .where('event_id', '=', 'evt_hang')
      .where('state', '=', 'running')
      .executeTakeFirstOrThrow()
    const pid = Number(running.claimed_by!.split(':').pop())
    const victim = workers.find((w) => w.pid === pid)!
    expect(victim).toBeDefined()
    process.kill(pid, 'SIGKILL')
    await victim.exit

    const ids = Array.from({ length: 200 }, (_, i) => `evt_${String(i).padStart(3, '0')}`)
    for (let i = 0; i < ids.length; i += 20) {
      await database.db.transaction().execute(async (trx) => {
        for (const id of ids.slice(i, i + 20)) {
          const now = new Date()
          await eventInsert(trx, {
            owner_id: 'default',
            event: { id, type: 'booking.created', subject: `booking://${id}`, occurred_at: now, data: {} },
            now,
            actor: 'system',
          })
        }
      })
    }
    await receiver.waitFor(200, 60_000)

    await eventually('the rescued delivery to complete', async () => {
      const d = await database.db.selectFrom('deliveries').select('state').where('id', '=', running.id).executeTakeFirst()
      return d?.state === 'completed'
    }).catch(async (err) => {
      const rows = await database.db.selectFrom('ledger').selectAll().where('delivery_id', '=', running.id).orderBy('position').execute()
      const d = await database.db.selectFrom('deliveries').selectAll().where('id', '=', running.id).execute()
      const e = await database.db.selectFrom('endpoints').select(['busy_until', 'busy_delivery_id', 'enabled', 'failing_since']).execute()
      throw new Error(`${(err as Error).message}\n${JSON.stringify({ rows, d, e, now: new Date(), out: workers.map((w) => w.output()) }, null, 1)}`)
    })
    expect(hanging.requests).toHaveLength(2)
    const history = await database.db
      .selectFrom('ledger')
      .select(['kind', 'payload'])
      .where('delivery_id', '=', running.id)
      .orderBy('position')
      .execute()
    // The rows naming it (its enqueue is its event's fan-out decision: ledger format 3).
    expect(history.map((h) => h.kind)).toEqual([
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
      'delivery.claimed',
      'delivery.attempted',
    ])
    expect(history[1]!.payload).toMatchObject({ outcome: 'interrupted', attempt: 1 })
    expect(history[4]!.payload).toMatchObject({ outcome: 'completed', completes: true })
    // Every delivery of the busy endpoint is settled, so nothing is left to send: each event
    // arrived exactly once, and never two at once.
    await eventually('the drain to settle', async () => {
      const open = await database.db.selectFrom('deliveries').select('id').where('endpoint_id', '=', endpoint.id).where('state', '!=', 'completed').execute()
      return open.length === 0
    })
    const states = await database.db.selectFrom('deliveries').select('state').where('endpoint_id', '=', endpoint.id).execute()
    expect(states).toHaveLength(200)
    const deliveredIds = receiver.requests.map((r) => String(r.headers['webhook-id']))
    expect(new Set(deliveredIds).size).toBe(200)
    // A duplicate here names itself: which event, and its delivery's ledger entries.
    const twice = deliveredIds.filter((id, i) => deliveredIds.indexOf(id) !== i)
    const twiceLedger = twice.length === 0 ? [] : await database.db.selectFrom('ledger').select(['position', 'kind', 'actor', 'payload']).where('event_id', 'in', twice).orderBy('position').execute()
    expect(deliveredIds.length, JSON.stringify({ twice, ledger: twiceLedger }, null, 1)).toBe(200)
    expect(receiver.maxConcurrent).toBe(1)

    const replay = await runCli(['ledger', 'replay', '--verify'], env)
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    expect(replay.stdout).toContain('no differences')
  })
})
