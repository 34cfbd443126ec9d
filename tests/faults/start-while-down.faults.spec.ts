import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '@hookledger/embedded'
import { eventually } from '@hookledger/testkit'
import { FaultRig, VerifyingReceiver, faultEvents, report, scaled, tally } from './fault-harness.js'

const ENDPOINTS = 2
const EVENTS = scaled(20, 200)

// tests/e2e/database-outage.e2e.spec.ts covers `serve` (role all) started before its database
// and the outage after; this adds the split roles, the API's answer while it waits, and a
// worker that delivers what was already waiting once the database is back.
describe('services started while the database is down', () => {
  const rig = new FaultRig()
  const receiver = new VerifyingReceiver()
  afterAll(async () => {
    await receiver.close()
    await rig.close()
  })

  it('an api and a worker keep waiting (with backoff), answer 503 starting meanwhile, come up when it returns and deliver what was waiting', async () => {
    const began = performance.now()
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    const events = faultEvents(EVENTS, ENDPOINTS)
    await rig.publishViaStore(events)
    const token = await rig.token(['admin'])
    await rig.stopDatabase()

    // Each logs `database:waiting` per try: two tries each prove a failed retry does not end the wait.
    const waits = { api: 0, worker: 0 }
    const countWaits = (role: keyof typeof waits) => (out: string) => (waits[role] = out.split('database:waiting').length - 1)
    const apiPort = await freePort()
    const api = rig.serve(['--role', 'api', '--port', String(apiPort)], rig.env(), countWaits('api'))
    const worker = rig.serve(['--role', 'worker'], rig.env(), countWaits('worker'))
    await eventually('both to retry the database', () => waits.api >= 2 && waits.worker >= 2)
    const starting = await fetch(`http://127.0.0.1:${apiPort}/api/admin/webhooks`, { headers: { authorization: `Bearer ${token}` } })
    expect(starting.status).toBe(503)
    expect(starting.headers.get('retry-after')).toBe('1')
    expect(((await starting.json()) as { code: string }).code).toBe('starting')

    await rig.startDatabase()
    rig.outages++
    const [apiServe, workerServe] = await Promise.all([api, worker])
    expect((await fetch(`${apiServe.url}/api/admin/webhooks`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    try {
      await rig.drained(receiver, events, scaled(30_000, 120_000))
    } finally {
      const seconds = ((performance.now() - began) / 1000).toFixed(1)
      report('start-while-down', tally(receiver, events), { outages: rig.outages, kills: 0, waits_api: waits.api, waits_worker: waits.worker, seconds })
    }
    const result = tally(receiver, events)
    expect(result.lost).toBe(0)
    expect(result.duplicated).toBe(0)
    expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
    for (const s of [apiServe, workerServe]) expect(await rig.terminate(s), s.output()).toBe(0)
  })
})
