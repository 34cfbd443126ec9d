import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { attemptExchange, thinEventBody, type AttemptExchangeInput } from './attempt-exchange.js'
import { generateWebhookSecret, secretKeyId } from '../signing/webhook-signature.js'

const secret = generateWebhookSecret()
const event = { id: 'evt_1', type: 'booking.created', subject: 'booking://1', occurred_at: new Date('2026-01-01T00:00:00Z'), data: { booking_id: '1' } }
const base: AttemptExchangeInput = {
  event_id: 'evt_1',
  event,
  url: 'https://example.test/hook',
  started_at: new Date('2026-01-01T00:00:05.900Z'),
  signed_with: [secretKeyId(secret)],
  secrets: new Map([[secretKeyId(secret), secret]]),
  status_code: 500,
  response_excerpt: 'boom',
  response_headers: { 'content-type': 'text/plain' },
}

describe('attemptExchange', () => {
  it('rebuilds the request the receiver verified: body, timestamp (the start, in seconds), signature', () => {
    const started_at = new Date() // the receiver's library checks the timestamp against now
    const { request } = attemptExchange({ ...base, started_at })
    expect(request.body).toBe(thinEventBody(event))
    expect(request.headers['webhook-timestamp']).toBe(String(Math.floor(started_at.getTime() / 1000)))
    expect(request.headers['content-length']).toBe(String(Buffer.byteLength(request.body!)))
    expect(JSON.stringify(request)).not.toContain(secret)
    // The signature verifies against the body, as the receiver's library checks it.
    expect(new Webhook(secret).verify(request.body!, request.headers)).toEqual(JSON.parse(request.body!))
  })

  const cases: [string, Partial<AttemptExchangeInput>, (r: ReturnType<typeof attemptExchange>) => void][] = [
    ['no answer → response null', { status_code: null }, (r) => expect(r.response).toBeNull()],
    ['an answer → status, headers, body, not truncated', {}, (r) => expect(r.response).toEqual({ status_code: 500, headers: { 'content-type': 'text/plain' }, body: 'boom', truncated: false })],
    ['truncated is carried', { response_truncated: true }, (r) => expect(r.response?.truncated).toBe(true)],
    ['an older entry without headers or body → empty', { response_excerpt: undefined, response_headers: undefined, status_code: 204 }, (r) => expect(r.response).toEqual({ status_code: 204, headers: {}, body: '', truncated: false })],
    ['a pruned event → body null, signature not shown', { event: null }, (r) => {
      expect(r.request.body).toBeNull()
      expect(r.request.headers['webhook-signature']).toMatch(/^\(not shown/)
    }],
    ['a key no longer held → signature not shown, key named', { secrets: new Map() }, (r) => expect(r.request.headers['webhook-signature']).toContain(secretKeyId(secret))],
  ]
  it.each(cases)('%s', (_, patch, check) => check(attemptExchange({ ...base, ...patch })))
})
