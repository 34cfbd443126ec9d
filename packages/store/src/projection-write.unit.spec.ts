import { describe, expect, it } from 'vitest'
import { rowPatch } from './projection-write.js'

const at = (iso: string) => new Date(iso)
const before = {
  id: 'r1',
  url: 'https://a.example',
  event_types: ['*'],
  secret_sealed: new Uint8Array([1, 2, 3]),
  busy_until: at('2026-01-01T00:00:00Z'),
  failing_since: null as Date | null,
  enabled: true,
}

describe('rowPatch: a changed row as its id and the columns that differ', () => {
  it.each([
    ['nothing changed (equal values in new objects)', { ...before, event_types: ['*'], secret_sealed: new Uint8Array([1, 2, 3]), busy_until: at('2026-01-01T00:00:00Z') }, { id: 'r1' }],
    ['a timestamp moved', { ...before, busy_until: at('2026-01-01T00:00:01Z') }, { id: 'r1', busy_until: at('2026-01-01T00:00:01Z') }],
    ['a column set to null', { ...before, busy_until: null }, { id: 'r1', busy_until: null }],
    ['a column set from null', { ...before, failing_since: at('2026-01-02T00:00:00Z') }, { id: 'r1', failing_since: at('2026-01-02T00:00:00Z') }],
    ['an array changed', { ...before, event_types: ['*', 'x'] }, { id: 'r1', event_types: ['*', 'x'] }],
    ['bytes changed travel as hex', { ...before, secret_sealed: new Uint8Array([1, 2, 4]) }, { id: 'r1', secret_sealed: '\\x010204' }],
    ['a boolean flipped', { ...before, enabled: false }, { id: 'r1', enabled: false }],
  ])('%s', (_name, row, patch) => {
    expect(rowPatch(row as typeof before, before)).toEqual(patch)
  })
})
