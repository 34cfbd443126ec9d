/**
 * `hookledger listen` with `--secret`: a real loopback receiver checking Standard Webhooks
 * signatures with the standardwebhooks library — a signed request is answered `--status` and
 * printed verified, a forged one 401 and printed with why; `--count` ends it.
 */
import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { generateWebhookSecret } from '@hookledger/core'
import { eventually } from '@hookledger/testkit'
import { main } from './main.js'

describe('hookledger listen --secret', () => {
  it('verifies a signed request, refuses a forged one, exits after --count verified arrivals', async () => {
    const secret = generateWebhookSecret()
    const out: string[] = []
    const io = { out: (l: string) => void out.push(l), err: (l: string) => void out.push(`ERR ${l}`) }
    const done = main(['listen', '--port', '0', '--secret', secret, '--status', '202', '--count', '1'], { io, env: { LOG_LEVEL: 'silent' } })
    const url = await eventually('the receiver to listen', () => /listening on (http:\/\/\S+)/.exec(out.join('\n'))?.[1])
    const body = JSON.stringify({ id: 'evt_1', type: 'booking.created', subject: 'booking://1', occurred_at: new Date().toISOString(), data: {} })
    const signed = (with_: string) => new Webhook(with_).sign('evt_1', new Date(), body)
    const headers = (signature: string) => ({ 'content-type': 'application/json', 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': signature })

    const forged = await fetch(`${url}/hook`, { method: 'POST', headers: headers(signed(generateWebhookSecret())), body })
    expect(forged.status).toBe(401)
    const good = await fetch(`${url}/hook`, { method: 'POST', headers: headers(signed(secret)), body })
    expect(good.status).toBe(202)
    expect(await done).toBe(0)
    expect(out.filter((l) => l.startsWith('evt_1'))).toEqual([
      expect.stringMatching(/^evt_1 booking\.created booking:\/\/1 — signature invalid \(.+\)$/),
      'evt_1 booking.created booking://1 — signature verified (endpoint (--secret))',
    ])
  })

  it('refuses a malformed --secret or --status, naming it', async () => {
    const out: string[] = []
    const io = { out: (l: string) => void out.push(l), err: (l: string) => void out.push(l) }
    expect(await main(['listen', '--secret', 'nope'], { io, env: {} })).toBe(2)
    expect(await main(['listen', '--status', '99'], { io, env: {} })).toBe(2)
    expect(out).toEqual([expect.stringContaining('--secret'), expect.stringContaining('--status')])
  })
})
