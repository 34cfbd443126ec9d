import { describe, expect, it } from 'vitest'
import { MAX_PREPARED, PREPARE_AFTER, connectionStatements, nameFor, statementName, transactionAfter } from './prepared-statements.js'

describe('nameFor: which executions go by name', () => {
  it('a statement with parameters: unnamed until its PREPARE_AFTER-th execution, named from then on', () => {
    const s = connectionStatements()
    const names = Array.from({ length: PREPARE_AFTER + 2 }, () => nameFor(s, 'select $1', true))
    expect(names.slice(0, PREPARE_AFTER - 1)).toEqual(Array(PREPARE_AFTER - 1).fill(null))
    expect(names.slice(PREPARE_AFTER - 1)).toEqual(Array(3).fill(statementName('select $1')))
  })

  it.each([
    ['no parameters (begin, commit: the simple protocol)', 'begin', false, null],
    ['sent unnamed since its result type changed', 'select * from t where id = $1', true, null],
  ])('%s: never named', (_, text, hasParameters, expected) => {
    const s = connectionStatements()
    s.unnamed.add('select * from t where id = $1')
    for (let i = 0; i < PREPARE_AFTER * 2; i++) expect(nameFor(s, text, hasParameters)).toBe(expected)
  })

  it('at most MAX_PREPARED names a connection; others stay unnamed', () => {
    const s = connectionStatements()
    for (let k = 0; k <= MAX_PREPARED; k++) for (let i = 0; i < PREPARE_AFTER; i++) nameFor(s, `select ${k}, $1`, true)
    expect(s.named.size).toBe(MAX_PREPARED)
    expect(nameFor(s, `select ${MAX_PREPARED}, $1`, true)).toBeNull()
  })

  it('the same text has the same name on every connection; another text another name', () => {
    expect(statementName('select $1')).toBe(statementName('select $1'))
    expect(statementName('select $1')).not.toBe(statementName('select $2'))
    expect(statementName('select $1')).toMatch(/^hl_[0-9a-f]{24}$/)
  })
})

describe('transactionAfter: where a connection stands after a statement', () => {
  it.each([
    [false, 'begin', true],
    [false, 'start transaction isolation level serializable', true],
    [true, 'select 1', true],
    [true, 'commit', false],
    [true, 'rollback', false],
    [true, 'rollback to savepoint "a"', true],
    [true, 'savepoint "a"', true],
    [false, 'select 1', false],
  ])('in a transaction: %s, then %s → %s', (before, text, after) => {
    expect(transactionAfter(before, text)).toBe(after)
  })
})
