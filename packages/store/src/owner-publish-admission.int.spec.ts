/**
 * The API's publish limit (migration 0018) on a real database, as the service's role, on the fake
 * clock: admission advances the owner's bucket in a statement of its own (committed whatever the
 * publish does next), refuses over the limit with the time to retry and a suspended owner
 * outright, makes no owner row for an owner without one; the admitted publish still refuses an
 * owner suspended after its admission; a changed limit starts a full bucket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { ownerLimitsSet, ownerResume, ownerSuspend } from './owner-commands.js'
import { ownerPublishAdmit } from './owner-publish-admission.js'

let h: EngineHarness

beforeAll(async () => {
  h = await engineHarness({ start: '2026-03-01T00:00:00Z' })
})
afterAll(async () => {
  await h?.close()
})

const ctx = () => ({ now: h.clock.now(), actor: 'operator:test' })
const owners = async () => (await sql<{ id: string; publish_tat: Date | null }>`select id, publish_tat from owners order by id`.execute(h.db)).rows
const events = (id: string) => JSON.stringify([{ id, type: 'booking.created', subject: `booking://${id}`, occurred_at: h.clock.now().toISOString(), data: {} }])

describe('the API publish limit (its own statement)', () => {
  it('an owner without a row is admitted and gets none', async () => {
    expect(await ownerPublishAdmit(h.db, 'nobody', 1, h.clock.now())).toBeNull()
    expect((await owners()).map((o) => o.id)).not.toContain('nobody')
  })

  it('admits within the burst, then refuses until the bucket allows one more; each admission stays', async () => {
    await ownerLimitsSet(h.db, 'limited', ctx(), { publish_per_second: 2, publish_burst: 2 })
    expect(await ownerPublishAdmit(h.db, 'limited', 1, h.clock.now())).toBeNull()
    expect(await ownerPublishAdmit(h.db, 'limited', 1, h.clock.now())).toBeNull()
    // Committed on its own: the bucket is 2 periods (1 s) ahead, whatever a publish does after.
    expect((await owners()).find((o) => o.id === 'limited')?.publish_tat).toEqual(new Date(h.clock.now().getTime() + 1_000))
    const refused = await ownerPublishAdmit(h.db, 'limited', 1, h.clock.now())
    expect(refused).toMatchObject({ refused: 'owner_rate_limited', publish_per_second: 2, publish_burst: 2 })
    expect(refused?.refused === 'owner_rate_limited' && Date.parse(refused.retry_at)).toBe(h.clock.now().getTime() + 500)
    h.clock.advance(500)
    expect(await ownerPublishAdmit(h.db, 'limited', 1, h.clock.now())).toBeNull()
  })

  it('refuses a suspended owner, and so does the admitted publish when the suspension came after the admission', async () => {
    await ownerLimitsSet(h.db, 'paused', ctx(), { weight: 2 })
    expect(await ownerPublishAdmit(h.db, 'paused', 1, h.clock.now())).toBeNull()
    await ownerSuspend(h.db, 'paused', ctx(), 'unpaid')
    const publish = await sql<{ outcome: { refused?: string } }>`select hookledger_publish_admitted('paused', ${events('evt_after')}::jsonb, ${h.clock.now()}::timestamptz, 'owner:test') as outcome`.execute(h.db)
    expect(publish.rows[0]!.outcome).toMatchObject({ refused: 'owner_suspended', reason: 'unpaid' })
    expect(await ownerPublishAdmit(h.db, 'paused', 1, h.clock.now())).toMatchObject({ refused: 'owner_suspended', reason: 'unpaid' })
    expect((await sql`select id from events where id = 'evt_after'`.execute(h.db)).rows).toEqual([])
    await ownerResume(h.db, 'paused', ctx())
    const again = await sql<{ outcome: unknown }>`select hookledger_publish_admitted('paused', ${events('evt_after')}::jsonb, ${h.clock.now()}::timestamptz, 'owner:test') as outcome`.execute(h.db)
    expect(Array.isArray(again.rows[0]!.outcome)).toBe(true)
  })

  it('a changed limit starts a full bucket: a raised one admits at once, not when the old schedule catches up', async () => {
    await ownerLimitsSet(h.db, 'slow', ctx(), { publish_per_second: 0.01, publish_burst: 1 })
    expect(await ownerPublishAdmit(h.db, 'slow', 1, h.clock.now())).toBeNull()
    expect(await ownerPublishAdmit(h.db, 'slow', 1, h.clock.now())).toMatchObject({ refused: 'owner_rate_limited' })
    await ownerLimitsSet(h.db, 'slow', ctx(), { publish_per_second: 100 })
    expect(await ownerPublishAdmit(h.db, 'slow', 1, h.clock.now())).toBeNull()
    // A change to another limit leaves the bucket as it is.
    await ownerLimitsSet(h.db, 'slow', ctx(), { publish_per_second: 0.01 })
    expect(await ownerPublishAdmit(h.db, 'slow', 1, h.clock.now())).toBeNull()
    await ownerLimitsSet(h.db, 'slow', ctx(), { weight: 3 })
    expect(await ownerPublishAdmit(h.db, 'slow', 1, h.clock.now())).toMatchObject({ refused: 'owner_rate_limited' })
  })

  it('a publish costs at least one event', async () => {
    await expect(ownerPublishAdmit(h.db, 'limited', 0, h.clock.now())).rejects.toThrow(/at least one event/)
  })
})
