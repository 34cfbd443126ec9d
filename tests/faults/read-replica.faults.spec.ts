// Reads from a replica (issue 24 item 4), against two real PostgreSQL clusters: a primary and a
// streaming standby made by `hookledger db standby`. History reads go to the replica and say how
// far behind it is; a caller's read after its own write is current (the primary answers while
// the replica has not replayed it); a replica cut off from its primary is reported behind.
import { afterAll, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { FaultRig, VerifyingReceiver, faultEvents } from './fault-harness.js'
import { StandbyPair } from './standby-pair.js'

describe('history reads from a replica', () => {
  const rig = new FaultRig()
  const pair = new StandbyPair(rig)
  const receiver = new VerifyingReceiver()
  afterAll(async () => {
    await receiver.close()
    await pair.close()
    await rig.close()
  })

  it('go to the replica with its lag; the writer reads its own write; a replica cut off is reported behind', async () => {
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, 2)
    await pair.open({ synchronous: false })
    const serve = await rig.serve([], rig.env({ HOOKLEDGER_READ_DATABASE_URL: pair.standbyUrl() }))
    const writer = await rig.token(['admin', 'publish'])
    const reader = await rig.token(['admin'])
    const events = faultEvents(6, 2)
    await rig.publishViaApi(serve.url, writer, events)
    await rig.drained(receiver, events, 60_000)

    const read = (token: string, headers: Record<string, string> = {}) =>
      fetch(`${serve.url}/api/admin/deliveries?limit=50`, { headers: { authorization: `Bearer ${token}`, ...headers } })
    const runOf = async (res: Response, id: string) => ((await res.json()) as { data: { id: string; run: number }[] }).data.find((d) => d.id === id)?.run
    const from = (res: Response) => res.headers.get('x-hookledger-read-from')
    const lag = (res: Response) => res.headers.get('x-hookledger-replica-lag-ms')

    // Streaming and caught up: the replica answers, with its lag.
    await eventually('the replica answering', async () => from(await read(reader)) === 'replica')
    const caughtUp = await read(reader)
    expect(Number(lag(caughtUp))).toBeGreaterThanOrEqual(0)
    const first = ((await caughtUp.json()) as { data: { id: string; run: number }[] }).data[0]!
    expect(first.run).toBe(1)

    // Cut off from its primary, the replica falls behind the writer's next write.
    await pair.cutStandbyOff()
    const redo = await fetch(`${serve.url}/api/admin/deliveries/${first.id}/redeliver`, { method: 'POST', headers: { authorization: `Bearer ${writer}` } })
    expect(redo.status, await redo.clone().text()).toBeLessThan(300)
    const lsn = redo.headers.get('x-hookledger-write-lsn')
    expect(lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/i)

    // The writer reads its own write: the primary answers (no lag header), run 2.
    const mine = await read(writer)
    expect(from(mine)).toBe('primary')
    expect(lag(mine)).toBeNull()
    expect(await runOf(mine, first.id)).toBe(2)
    // Another caller reads the replica, which says it is behind and still shows run 1.
    const theirs = await read(reader)
    expect(from(theirs)).toBe('replica')
    expect(Number(lag(theirs))).toBeGreaterThan(0)
    expect(await runOf(theirs, first.id)).toBe(1)
    // Another caller handing over the writer's position (another API process's answer) reads current.
    const handedOver = await read(reader, { 'x-hookledger-write-lsn': lsn! })
    expect(from(handedOver)).toBe('primary')
    expect(await runOf(handedOver, first.id)).toBe(2)
    expect(await rig.terminate(serve), serve.output()).toBe(0)
  })
})
