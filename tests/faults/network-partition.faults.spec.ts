import { afterAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { eventually, TcpProxy } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, report, scaled, tally } from './fault-harness.js'

const ENDPOINTS = scaled(4, 8)
const EVENTS = scaled(40, 400)
// HOOKLEDGER_JOB_TIMEOUT_SECONDS=1: the lease is the job timeout + 2 s.

describe('a worker partitioned from the database', () => {
  const rig = new FaultRig()
  // Slow enough that worker A has requests in flight when the partition starts, well inside
  // the 0.66 s HTTP timeout, so its POSTs still succeed.
  const receiver = new VerifyingReceiver({ delayMs: 250 })
  let proxy: TcpProxy | null = null
  afterAll(async () => {
    await proxy?.close()
    await receiver.close()
    await rig.close()
  })

  it('longer than its lease, while its POSTs succeed: the other worker rescues, the late settles are kept as dropped, nothing is lost, never two requests at once', async () => {
    const began = performance.now()
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    const events = faultEvents(EVENTS, ENDPOINTS)
    // Worker A reaches the database only through the proxy; worker B directly. A starts alone,
    // so it surely holds deliveries when the partition starts (B, nudged by its own settles,
    // could otherwise win every claim); B comes up within A's lease.
    proxy = await new TcpProxy({ port: rig.port }).start()
    const envA = rig.env({ DATABASE_URL: rig.databaseUrl(proxy.port) })
    const a = await rig.serve(['--role', 'worker'], envA)
    await rig.publishViaStore(events)

    const heldByA = () =>
      rig.db
        .selectFrom('deliveries')
        .select(['id', 'event_id', 'lease_until'])
        .where('state', '=', 'running')
        .where('claimed_by', 'like', `%:${a.pid}`)
        .execute()
    await eventually(
      'worker A to have a request in flight',
      async () => {
        const flying = new Set(receiver.inFlight().map((h) => h.eventId))
        return flying.size > 0 && (await heldByA()).some((d) => flying.has(d.event_id))
      },
      { everyMs: 10 },
    )
    proxy.blackhole()
    const partitionedAt = performance.now()
    // What A holds now stays claimed by it: A can no longer write.
    const held = await heldByA()
    const heldEvents = new Set(held.map((d) => d.event_id))
    const b = await rig.serve(['--role', 'worker'], rig.env())
    // B's rescuer takes them back once their leases run out; A is still cut off meanwhile.
    await eventually('worker B to rescue what A held', async () => (await heldByA()).length === 0, { timeoutMs: 30_000 })
    const partitionMs = performance.now() - partitionedAt
    // Cut off past every lease A held (each began at its claim, before the partition; this
    // machine's clock is the database's).
    expect(Date.now()).toBeGreaterThanOrEqual(Math.max(...held.map((d) => d.lease_until!.getTime())))
    proxy.heal()

    // A's POSTs that the receiver answered before the rescue: their settles arrive late.
    const answeredByA = receiver.hits.filter((h) => heldEvents.has(h.eventId) && h.receivedAt < partitionedAt && h.answeredAt !== null)
    expect(answeredByA.length).toBeGreaterThan(0)
    const dropped = await eventually('A’s late settles kept as delivery.settle_dropped', async () => {
      const { rows } = await sql<{ event_id: string; actor: string; payload: { status_code: number | null; outcome: string } }>`
        select event_id, actor, payload from ledger where kind = 'delivery.settle_dropped'
      `.execute(rig.db)
      return answeredByA.every((h) => rows.some((r) => r.event_id === h.eventId)) && rows
    })
    for (const h of answeredByA) {
      expect(dropped.find((r) => r.event_id === h.eventId)).toMatchObject({ actor: expect.stringMatching(new RegExp(`:${a.pid}$`)), payload: { status_code: 204 } })
    }

    try {
      await rig.drained(receiver, events, scaled(60_000, 300_000))
    } finally {
      const seconds = ((performance.now() - began) / 1000).toFixed(1)
      report('network-partition', tally(receiver, events), {
        partitions: 1,
        partition_ms: Math.round(partitionMs),
        held_by_partitioned_worker: held.length,
        settle_dropped: dropped.length,
        kills: 0,
        seconds,
      })
    }
    const result = tally(receiver, events)
    // A's answered POST ended before B re-sent the same delivery (HTTP timeout 0.66 s < lease 3 s).
    for (const h of answeredByA) {
      const resent = receiver.hits.find((r) => r.eventId === h.eventId && r !== h)
      expect(resent && resent.receivedAt).toBeGreaterThan(h.answeredAt!)
    }
    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
    for (const w of [a, b]) expect(await rig.terminate(w), w.output()).toBe(0)
    const replay = await runCli(['ledger', 'replay', '--verify'], rig.env())
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
  })
})
