import { describe, expect, it } from 'vitest'
import {
  EVENT_NAME_MAX_LENGTH,
  isValidEventType,
  isValidGlob,
  matchesAny,
  matchesEventType,
} from './event-glob.js'

describe('isValidEventType', () => {
  it.each([
    ['booking.created', true],
    ['microsite.store.doc_inserted', true],
    ['access_request.status_changed', true],
    ['single', true],
    ['Mixed.Case9', true],
    ['', false],
    ['.booking', false],
    ['booking.', false],
    ['booking..created', false],
    ['booking.*', false],
    ['booking-created', false],
    ['booking created', false],
    [' booking.created', false],
    ['booking.créé', false],
    ['a'.repeat(EVENT_NAME_MAX_LENGTH), true],
    ['a'.repeat(EVENT_NAME_MAX_LENGTH + 1), false],
  ])('%j → %s', (type, expected) => {
    expect(isValidEventType(type)).toBe(expected)
  })

  it('refuses non-strings at runtime', () => {
    expect(isValidEventType(42 as unknown as string)).toBe(false)
  })
})

describe('isValidGlob', () => {
  it.each([
    ['*', true],
    ['**', true],
    ['booking.*', true],
    ['booking.**', true],
    ['*.created', true],
    ['**.created', true],
    ['a.**.z', true],
    ['booking.created', true],
    ['', false],
    ['***', false],
    ['book*', false],
    ['booking.cre*', false],
    ['booking.', false],
    ['.*', false],
    ['booking..*', false],
    ['booking.[ab]', false],
    ['booking.?', false],
    ['(a+)+', false],
    ['*.'.repeat(EVENT_NAME_MAX_LENGTH), false],
  ])('%j → %s', (glob, expected) => {
    expect(isValidGlob(glob)).toBe(expected)
  })
})

describe('matchesEventType', () => {
  it.each([
    // `*` alone: everything, any depth
    ['*', 'booking.created', true],
    ['*', 'microsite.store.doc_inserted', true],
    ['*', 'single', true],
    // `*` inside a glob: exactly one segment
    ['booking.*', 'booking.created', true],
    ['booking.*', 'booking.x.y', false],
    ['booking.*', 'booking', false],
    ['booking.*', 'bookings.created', false],
    ['*.created', 'booking.created', true],
    ['*.created', 'access_request.created', true],
    ['*.created', 'a.b.created', false],
    ['*.*', 'booking.created', true],
    ['*.*', 'microsite.store.doc_inserted', false],
    ['microsite.*.doc_inserted', 'microsite.store.doc_inserted', true],
    // `**`: one or more segments
    ['booking.**', 'booking.created', true],
    ['booking.**', 'booking.a.b', true],
    ['booking.**', 'booking', false],
    ['booking.**', 'bookingx.created', false],
    ['**', 'single', true],
    ['**', 'a.b.c.d', true],
    ['**.doc_inserted', 'microsite.store.doc_inserted', true],
    ['**.doc_inserted', 'doc_inserted', false],
    ['microsite.**.doc_inserted', 'microsite.store.doc_inserted', true],
    ['microsite.**.doc_inserted', 'microsite.doc_inserted', false],
    ['a.**.**', 'a.b.c', true],
    ['a.**.**', 'a.b', false],
    ['**.b.**', 'a.b.c', true],
    ['**.b.**', 'b.c', false],
    // literals
    ['booking.created', 'booking.created', true],
    ['booking.created', 'booking.cancelled', false],
    ['booking.created', 'Booking.created', false],
    ['booking', 'booking.created', false],
    // invalid inputs fail closed
    ['book*', 'booking.created', false],
    ['', 'booking.created', false],
    ['booking.*', '', false],
    ['*', 'booking..created', false],
    ['*', 'booking.*', false],
  ])('%j vs %j → %s', (glob, type, expected) => {
    expect(matchesEventType(glob, type)).toBe(expected)
  })

  it('stays fast on a pathological glob (no backtracking blow-up)', () => {
    const glob = Array.from({ length: 60 }, () => '**').join('.') + '.z'
    const type = Array.from({ length: 90 }, () => 'a').join('.') + '.y'
    const started = performance.now()
    expect(matchesEventType(glob, type)).toBe(false)
    expect(performance.now() - started).toBeLessThan(100)
  })
})

describe('matchesAny', () => {
  it.each([
    [[], 'booking.created', false],
    [['code.*'], 'booking.created', false],
    [['code.*', 'booking.*'], 'booking.created', true],
    [['book*', 'booking.created'], 'booking.created', true],
    [['book*'], 'booking.created', false],
  ])('%j vs %j → %s', (globs, type, expected) => {
    expect(matchesAny(globs, type)).toBe(expected)
  })
})
