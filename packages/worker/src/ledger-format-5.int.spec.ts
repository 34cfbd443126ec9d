/**
 * Ledger format 5 (migration 0023, core ledger-format.ts): an attempt leaves out `counted: true`,
 * `run: 1` and `error: null`, and a claim names its lease's length (`lease_ms`) instead of its
 * end. The same history written in format 4 — every field present, the lease's end — reads,
 * replays and checks the same.
 */
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JOB_TIMEOUT_MS } from '@hookledger/core'
import { attemptList } from '@hookledger/store'
import { adminDbOf, bypassLedgerGuards, engineHarness, type EngineHarness } from '@hookledger/testkit'

describe('ledger format 5: an attempt leaves out what is usual, a claim names its lease length', () => {
  let h: EngineHarness
  let deliveryId = ''
  const rows = async () =>
    (
      await sql<{ position: string; kind: string; occurred_at: Date; payload: Record<string, unknown> }>`
        select position, kind, occurred_at, payload from ledger where delivery_id = ${deliveryId}::uuid order by position
      `.execute(h.db)
    ).rows

  beforeAll(async () => {
    h = await engineHarness()
    await h.createEndpoint()
    h.receiver.enqueue({ status: 500 })
    await h.publish({ id: 'evt_f5' })
    await h.step()
    h.clock.advance(5_000)
    await h.step()
    deliveryId = (await h.deliveryOf('evt_f5')).id
  })
  afterAll(() => h?.close())

  it('writes the claim as a lease length and the attempts without their usual values', async () => {
    const ledger = await rows()
    expect(ledger.map((e) => e.kind)).toEqual([
      'delivery.claimed',
      'delivery.attempted',
      'delivery.retry_scheduled',
      'delivery.claimed',
      'delivery.attempted',
    ])
    expect(ledger[0]!.payload).toEqual({ lease_ms: JOB_TIMEOUT_MS })
    const [failed, completed] = [ledger[1]!.payload, ledger[4]!.payload]
    expect(failed).toMatchObject({ attempt: 1, error: 'HTTP 500', outcome: 'retry_scheduled' })
    expect(completed).toMatchObject({ attempt: 2, outcome: 'completed', completes: true })
    for (const key of ['counted', 'run']) {
      expect(failed).not.toHaveProperty(key)
      expect(completed).not.toHaveProperty(key)
    }
    expect(completed).not.toHaveProperty('error')
  })

  it('reads them with the usual values filled in, and replays with no difference', async () => {
    const { attempts } = await attemptList(h.db, h.owner, deliveryId)
    expect(attempts.map((a) => [a.attempt, a.counted, a.run, a.error, a.outcome])).toEqual([
      [1, true, 1, 'HTTP 500', 'retry_scheduled'],
      [2, true, 1, null, 'completed'],
    ])
    const report = await h.replay()
    expect(report.differences).toEqual([])
  })

  it('the write takes a claim in either format (a worker of format 4 keeps claiming across the upgrade), never one without a lease', async () => {
    const problem = async (payload: object) =>
      (
        await sql<{ problem: string | null }>`
          select hookledger_entries_problem(array[row(1, now(), ${h.owner}, 'delivery.claimed', ${'00000000-0000-4000-8000-00000000e001'}::uuid,
            ${deliveryId}::uuid, 'evt_f5', ${JSON.stringify(payload)}::jsonb, 'worker:w1')]::hookledger_entry[], ${h.owner}) as problem
        `.execute(adminDbOf(h.db)) // the rule itself: only the write function may call it
      ).rows[0]!.problem
    expect(await problem({ lease_ms: JOB_TIMEOUT_MS })).toBeNull()
    expect(await problem({ lease_until: new Date().toISOString() })).toBeNull()
    expect(await problem({ worker: 'worker:w1', lease_until: new Date().toISOString() })).toBeNull()
    expect(await problem({})).toMatch(/^delivery\.claimed: payload\.lease_ms must be a number/)
    expect(await problem({ lease_ms: '15000' })).toMatch(/^delivery\.claimed: payload\.lease_ms must be a number/)
  })

  it('the same history in format 4 (every field, the lease end) reads and replays the same', async () => {
    const before = await attemptList(h.db, h.owner, deliveryId)
    await bypassLedgerGuards(h.db, async (trx) => {
      await sql`
        update ledger set payload = jsonb_build_object('lease_until',
            to_char((occurred_at + (payload ->> 'lease_ms')::int * interval '1 ms') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        where delivery_id = ${deliveryId}::uuid and kind = 'delivery.claimed'
      `.execute(trx)
      await sql`
        update ledger set payload = jsonb_build_object('counted', true, 'run', 1, 'error', null) || payload
        where delivery_id = ${deliveryId}::uuid and kind = 'delivery.attempted'
      `.execute(trx)
    })
    const ledger = await rows()
    expect(ledger[0]!.payload).toEqual({ lease_until: new Date(ledger[0]!.occurred_at.getTime() + JOB_TIMEOUT_MS).toISOString() })
    expect(ledger[1]!.payload).toMatchObject({ counted: true, run: 1, error: 'HTTP 500' })
    expect(ledger[4]!.payload).toMatchObject({ counted: true, run: 1, error: null })
    expect(await attemptList(h.db, h.owner, deliveryId)).toEqual(before)
    const report = await h.replay()
    expect(report.differences).toEqual([])
  })
})
