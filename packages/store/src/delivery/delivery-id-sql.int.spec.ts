/**
 * The database derives a delivery's id from its pair exactly as core's deliveryIdFor does
 * (hookledger_delivery_id, migration 0015): the write function checks a fan-out's implied
 * enqueues with it, and replay expands them with it.
 */
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deliveryIdFor } from '@hookledger/core'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'

describe('hookledger_delivery_id', () => {
  let h: EngineHarness
  beforeAll(async () => {
    h = await engineHarness()
  })
  afterAll(() => h.close())

  it('is deliveryIdFor, for ids of every shape an event may have', async () => {
    const pairs = [
      ...Array.from({ length: 50 }, () => [randomUUID(), `evt_${randomUUID()}`] as const),
      [randomUUID(), 'a'],
      [randomUUID(), 'ünïcødé-事件-🎉'],
      [randomUUID(), 'x'.repeat(255)],
      ['00000000-0000-4000-8000-000000000000', 'evt_1'],
    ] as const
    const rows = (
      await sql<{ id: string }>`
        select hookledger_delivery_id(e::uuid, v) as id from unnest(${pairs.map((p) => p[0])}::text[], ${pairs.map((p) => p[1])}::text[]) with ordinality as x(e, v, n) order by n
      `.execute(h.db)
    ).rows
    expect(rows.map((r) => r.id)).toEqual(pairs.map(([e, v]) => deliveryIdFor(e, v)))
  })
})
