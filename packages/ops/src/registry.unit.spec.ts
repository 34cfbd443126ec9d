import { describe, expect, it } from 'vitest'
import { OpError } from './op-error.js'
import { INPUT_MAX_DEPTH, parseOpInput } from './op-input.js'
import { OPERATIONS, findOperation } from './registry.js'

describe('the operation registry', () => {
  it('names each op and each (method, path) once', () => {
    const names = OPERATIONS.map((op) => op.name)
    expect(new Set(names).size).toBe(names.length)
    const routes = OPERATIONS.map((op) => `${op.http.method} ${op.http.path}`)
    expect(new Set(routes).size).toBe(routes.length)
    expect(findOperation('webhooks.list')?.http).toEqual({
      method: 'GET',
      path: '/api/admin/webhooks',
    })
  })

  it('declares every SPEC §7 operation at its route', () => {
    const routes = Object.fromEntries(
      OPERATIONS.map((op) => [op.name, `${op.http.method} ${op.http.path}`]),
    )
    expect(routes).toMatchObject({
      'webhooks.list': 'GET /api/admin/webhooks',
      'webhooks.create': 'POST /api/admin/webhooks',
      'webhooks.get': 'GET /api/admin/webhooks/:id',
      'webhooks.update': 'PATCH /api/admin/webhooks/:id',
      'webhooks.delete': 'DELETE /api/admin/webhooks/:id',
      'webhooks.rotate_secret': 'POST /api/admin/webhooks/:id/rotate_secret',
      'webhooks.send_test': 'POST /api/admin/webhooks/:id/send_test',
      'webhooks.deliveries': 'GET /api/admin/webhooks/:id/deliveries',
      'webhooks.attempts': 'GET /api/admin/deliveries/:id/attempts',
      'webhooks.redeliver': 'POST /api/admin/webhooks/:id/redeliver',
      'webhooks.recover': 'POST /api/admin/webhooks/:id/recover',
      'webhooks.event_types': 'GET /api/admin/webhooks/event_types',
      'events.publish': 'POST /api/events',
      'ledger.read': 'GET /api/operator/ledger',
      'ledger.replay': 'POST /api/operator/ledger/replay',
      'ledger.audit': 'GET /api/operator/ledger/audit',
    })
    expect(findOperation('events.publish')?.scope).toBe('publish')
    for (const op of OPERATIONS.filter((o) => o.http.path.startsWith('/api/operator')))
      expect(op.scope).toBe('operator')
    for (const op of OPERATIONS.filter((o) => o.http.path.startsWith('/api/admin')))
      expect(op.scope).toBe('admin')
  })

  it('every input is strict and holds its path parameters', () => {
    for (const op of OPERATIONS) {
      const params = [...op.http.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!)
      const shape = (op.input as unknown as { shape: Record<string, unknown> }).shape
      for (const p of params) expect(shape, `${op.name} has ${p}`).toHaveProperty(p)
      expect(() => parseOpInput(op, { surely_unknown_field: 1 }), op.name).toThrow(OpError)
    }
  })
})

describe('parseOpInput', () => {
  const publish = findOperation('events.publish')!
  const refused = (raw: unknown) => {
    try {
      parseOpInput(publish, raw)
    } catch (err) {
      expect(err).toBeInstanceOf(OpError)
      return { code: (err as OpError).code, field: (err as OpError).field }
    }
    throw new Error('accepted')
  }

  it('names the field of a NUL, a lone surrogate, an unknown key or a wrong type', () => {
    const base = { type: 'booking.created', subject: 'booking://1' }
    expect(refused({ ...base, data: { a: { b: 'x\u0000' } } })).toEqual({
      code: 'invalid_input',
      field: 'data.a.b',
    })
    expect(refused({ ...base, subject: 'broken \ud800' })).toEqual({
      code: 'invalid_input',
      field: 'subject',
    })
    expect(refused({ ...base, data: { ['\u0000']: 1 } })).toEqual({ code: 'invalid_input', field: 'data' })
    expect(refused({ ...base, extra: 1 })).toEqual({ code: 'invalid_input', field: 'extra' })
    expect(refused({ ...base, subject: 5 })).toEqual({ code: 'invalid_input', field: 'subject' })
    // A well-formed surrogate pair is fine.
    expect(parseOpInput(publish, { ...base, subject: 'emoji://😀' })).toMatchObject({
      subject: 'emoji://😀',
    })
  })

  it(`refuses nesting deeper than ${INPUT_MAX_DEPTH} levels without recursing`, () => {
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = { d: deep }
    expect(refused({ type: 'booking.created', subject: 's', data: deep }).code).toBe('invalid_input')
  })
})
