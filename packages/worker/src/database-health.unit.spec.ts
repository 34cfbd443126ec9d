import { describe, expect, it } from 'vitest'
import type { Logger } from '@hookledger/core'
import { DatabaseHealth } from './database-health.js'

function recording() {
  const lines: string[] = []
  const keep = (_: object, msg?: string) => void lines.push(msg ?? '')
  const logger: Logger = { debug: keep, info: keep, warn: keep, error: keep }
  return { lines, logger }
}
const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
const adminShutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })
const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' })

describe('DatabaseHealth: an outage is logged once when it begins and once when it ends', () => {
  it('many loops failing many times during one outage: one degraded, one recovered', () => {
    const r = recording()
    const health = new DatabaseHealth(r.logger)
    expect(health.failed(adminShutdown, 'producer')).toBe('unavailable')
    for (let i = 0; i < 50; i++) health.failed(refused, i % 2 ? 'settle' : 'sealer')
    expect(health.degraded).toBe(true)
    health.succeeded()
    health.succeeded()
    expect(r.lines).toEqual(['database:degraded', 'database:recovered'])
    expect(health.degraded).toBe(false)
    expect(health.outages).toBe(1)
  })

  it('a conflict is not an outage', () => {
    const r = recording()
    const health = new DatabaseHealth(r.logger)
    expect(health.failed(deadlock, 'settle')).toBe('retryable')
    expect(health.degraded).toBe(false)
    expect(r.lines).toEqual([])
  })

  it('two outages are two', () => {
    const health = new DatabaseHealth(recording().logger)
    health.failed(refused, 'producer')
    health.succeeded()
    health.failed(refused, 'producer')
    expect(health.outages).toBe(2)
  })
})
