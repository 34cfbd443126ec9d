import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { ownerLimitsSet, ownerResume, ownerSuspend } from '@hookledger/store'
import { engineHarness, type EngineHarness } from '@hookledger/testkit'
import { publish, publishMany, PublishError } from './index.js'

let h: EngineHarness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const booking = (id: string) => ({ owner_id: 'default', id, type: 'booking.created', subject: `booking://${id}`, data: { booking_id: id } })
const ctx = () => ({ now: new Date(), actor: 'operator' })
const events = async () => Number((await sql<{ n: string }>`select count(*) as n from events`.execute(h!.db)).rows[0]!.n)

/** Publishes inside an application transaction that also writes its own row, and commits. */
async function inAppTransaction(id: string): Promise<{ refused: PublishError | null }> {
  return h!.db.transaction().execute(async (trx) => {
    let refused: PublishError | null = null
    try {
      await publish(trx, booking(id))
    } catch (err) {
      if (!(err instanceof PublishError)) throw err
      refused = err
    }
    // The transaction is intact after a refusal: the application carries on and commits.
    await sql`select 1`.execute(trx)
    return { refused }
  })
}

describe('the publisher and the owner’s limits', () => {
  it('over the publish limit: a typed PublishError owner_rate_limited with retryAt, refused before writing, the transaction intact', async () => {
    h = await engineHarness()
    // One event per 1000 s on the database's clock: the second is refused whatever the machine's speed.
    await ownerLimitsSet(h.db, 'default', ctx(), { publish_per_second: 0.001, publish_burst: 1 })
    expect((await inAppTransaction('evt_1')).refused).toBeNull()
    const { refused } = await inAppTransaction('evt_2')
    expect(refused?.code).toBe('owner_rate_limited')
    expect(refused!.retryAt).toBeInstanceOf(Date)
    expect(refused!.retryAt!.getTime() - Date.now()).toBeGreaterThan(900_000)
    expect(refused!.message).toContain(refused!.retryAt!.toISOString())
    expect(await events()).toBe(1)
  })

  it('a batch spanning owners, one of them suspended: refused whole, nothing of the others stays', async () => {
    h = await engineHarness()
    await ownerSuspend(h.db, 'zeta', ctx(), 'unpaid')
    const refused = await h.db.transaction().execute(async (trx) => {
      const err = await publishMany(trx, [booking('evt_a'), { ...booking('evt_z'), owner_id: 'zeta' }]).catch((e: unknown) => e)
      await sql`select 1`.execute(trx)
      return err
    })
    expect(refused).toBeInstanceOf(PublishError)
    expect((refused as PublishError).code).toBe('owner_suspended')
    expect(await events()).toBe(0)
  })

  it('suspended: a typed PublishError owner_suspended, nothing written; resumed, it publishes', async () => {
    h = await engineHarness()
    await ownerSuspend(h.db, 'default', ctx(), 'unpaid')
    const { refused } = await inAppTransaction('evt_1')
    expect(refused?.code).toBe('owner_suspended')
    expect(refused!.retryAt).toBeUndefined()
    expect(await events()).toBe(0)
    await ownerResume(h.db, 'default', ctx())
    expect((await inAppTransaction('evt_1')).refused).toBeNull()
    expect(await events()).toBe(1)
  })
})
