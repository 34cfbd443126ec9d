import { describe, expect, it } from 'vitest'
import { judgeStatement } from './owner-routing-judge.js'

const owners = ['a', 'b']
describe('judgeStatement', () => {
  it.each([
    ['begin', [], 'no-table'],
    ['select clock_timestamp() as now', [], 'no-table'],
    ['select hookledger_write($1, $2::jsonb) as result', ['a', '{}'], 'one-owner'],
    ['select hookledger_write($1, $2::jsonb) as result', ['*', '{}'], 'cross-owner'],
    ['select * from endpoints where owner_id = $1 and id = $2', ['b', 'x'], 'one-owner'],
    ['select * from endpoints where owner_id = any($1::text[])', [['a', 'b']], 'cross-owner'],
    ['select * from endpoints where id = any($1::uuid[]) for update', [['x']], 'cross-owner'],
    ['select * from "events" where "owner_id" = $1', ['a'], 'one-owner'],
  ] as const)('%s with %j → %s', (text, values, routing) => {
    expect(judgeStatement({ text, values }, owners).routing).toBe(routing)
  })
})
