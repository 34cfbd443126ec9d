import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deliveryIdFor } from './delivery-id.js'

describe('deliveryIdFor', () => {
  const ep = '0b9d3f5e-7a64-4c1e-9f3b-2d7c1e8a4b60'
  it.each([
    ['the same pair gives the same id', () => deliveryIdFor(ep, 'evt_1') === deliveryIdFor(ep, 'evt_1'), true],
    ['another event gives another id', () => deliveryIdFor(ep, 'evt_1') === deliveryIdFor(ep, 'evt_2'), false],
    [
      'another endpoint gives another id',
      () => deliveryIdFor(ep, 'evt_1') === deliveryIdFor('0b9d3f5e-7a64-4c1e-9f3b-2d7c1e8a4b61', 'evt_1'),
      false,
    ],
    // The separator keeps ("a", "bc") and ("ab", "c") apart.
    ['pairs cannot run into each other', () => deliveryIdFor('a', 'bc') === deliveryIdFor('ab', 'c'), false],
  ])('%s', (_name, check, expected) => expect(check()).toBe(expected))

  it('is a well-formed RFC 9562 UUID (version 8) that our id validation accepts', () => {
    const id = deliveryIdFor(ep, 'evt_1')
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(z.string().uuid().safeParse(id).success).toBe(true)
  })
})
