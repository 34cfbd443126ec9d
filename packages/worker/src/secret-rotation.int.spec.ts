import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { generateWebhookSecret, secretKeyId } from '@hookledger/core'
import { endpointRotateSecret } from '@hookledger/store'
import { engineHarness, type EngineHarness, type ReceivedRequest } from '@hookledger/testkit'

let h: EngineHarness | null = null
afterEach(async () => {
  vi.useRealTimers()
  await h?.close()
  h = null
})

const GRACE_MS = 24 * 3_600_000

/** Verifies as an independent receiver would, at the time the request was signed. */
function verifies(secret: string, req: ReceivedRequest): boolean {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Number(req.headers['webhook-timestamp']) * 1000)
  try {
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>)
    return true
  } catch {
    return false
  } finally {
    vi.useRealTimers()
  }
}

describe('secret rotation', () => {
  it('signs with both secrets during the grace window and only the new one after it', async () => {
    h = await engineHarness()
    const { endpoint, secret: oldSecret } = await h.createEndpoint()
    const newSecret = generateWebhookSecret()
    await h.db.transaction().execute((trx) =>
      endpointRotateSecret(
        trx,
        { owner_id: h!.owner, now: h!.clock.now(), actor: 'owner:test' },
        endpoint.id,
        { secret_sealed: h!.secretBox.seal(newSecret), secret_key_id: secretKeyId(newSecret), graceMs: GRACE_MS },
      ),
    )

    // During the grace window: two v1 signatures; either secret alone verifies.
    h.clock.advance(GRACE_MS - 60_000)
    await h.publish({ id: 'evt_during' })
    await h.step()
    const during = h.receiver.requests[0]!
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2)
    expect(verifies(oldSecret, during)).toBe(true)
    expect(verifies(newSecret, during)).toBe(true)

    // After it: only the new secret signs.
    h.clock.advance(120_000)
    await h.publish({ id: 'evt_after' })
    await h.step()
    const after = h.receiver.requests[1]!
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1)
    expect(verifies(newSecret, after)).toBe(true)
    expect(verifies(oldSecret, after)).toBe(false)

    // The attempt history names the key ids that signed (never the keys).
    const attempts = await h.db.selectFrom('delivery_attempts').select(['signed_with']).orderBy('ledger_position').execute()
    expect(attempts.map((a) => a.signed_with)).toEqual([
      [secretKeyId(newSecret), secretKeyId(oldSecret)],
      [secretKeyId(newSecret)],
    ])
    expect((await h.replay()).differences).toEqual([])
  })
})
