import { describe, expect, it } from 'vitest'
import { classifyDatabaseError, type DatabaseErrorClass } from './database-error.js'

const err = (fields: Record<string, unknown>) => Object.assign(new Error(String(fields['message'] ?? 'x')), fields)

describe('classifyDatabaseError: what a database error means for the unit of work', () => {
  const cases: [string, unknown, DatabaseErrorClass][] = [
    ['57P01 admin shutdown', err({ code: '57P01', message: 'terminating connection due to administrator command' }), 'unavailable'],
    ['57P03 starting up', err({ code: '57P03', message: 'the database system is starting up' }), 'unavailable'],
    ['08006 connection failure', err({ code: '08006' }), 'unavailable'],
    ['08001 cannot connect', err({ code: '08001' }), 'unavailable'],
    ['ECONNREFUSED', err({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' }), 'unavailable'],
    ['ECONNRESET', err({ code: 'ECONNRESET' }), 'unavailable'],
    ['pg: Connection terminated unexpectedly', err({ message: 'Connection terminated unexpectedly' }), 'unavailable'],
    ['pg: connect timeout', err({ message: 'timeout exceeded when trying to connect' }), 'unavailable'],
    ['too many connections', err({ code: '53300' }), 'unavailable'],
    ['aggregate of refusals', Object.assign(new AggregateError([err({ code: 'ECONNREFUSED' }), err({ code: 'ECONNREFUSED' })]), {}), 'unavailable'],
    ['40001 serialization', err({ code: '40001' }), 'retryable'],
    ['40P01 deadlock', err({ code: '40P01' }), 'retryable'],
    ['55P03 lock not available', err({ code: '55P03' }), 'retryable'],
    ['23505 unique violation', err({ code: '23505' }), 'permanent'],
    ['22P02 bad text', err({ code: '22P02' }), 'permanent'],
    ['42P01 undefined table', err({ code: '42P01' }), 'permanent'],
    ['a plain bug', new TypeError('x is undefined'), 'permanent'],
    ['not an error', 'boom', 'permanent'],
    ['null', null, 'permanent'],
  ]
  it.each(cases)('%s', (_name, error, expected) => {
    expect(classifyDatabaseError(error)).toBe(expected)
  })
})
