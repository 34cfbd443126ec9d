/**
 * Closing the database never waits forever: a pool ends only once every client it lent is back,
 * and one that never comes back (a unit of work stuck on a dropped connection) must not hold a
 * stop, nor leave it waiting on nothing (Node's exit code 13, seen once stopping `serve` after a
 * database restart in the fault suite).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { testDatabase, type TestDatabase } from '@hookledger/testkit'
import { loadConfig } from '../config.js'
import { openDatabase } from './open-database.js'

let database: TestDatabase
const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-open-database-'))
beforeAll(async () => {
  database = await testDatabase()
})
afterAll(async () => {
  await database?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

function capturingLogger() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) })
  return { log: pino({ level: 'warn' }, stream), lines }
}

const config = () =>
  loadConfig({
    DATABASE_URL: database.url,
    HOOKLEDGER_DATA_DIR: dataDir,
    HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
    LOG_LEVEL: 'silent',
  })

describe('closing the database', () => {
  it('ends the pool when every client is back, with nothing to report', async () => {
    const { log, lines } = capturingLogger()
    const opened = await openDatabase(config(), log, 2, { poolEndGraceMs: 60_000 })
    await opened.db.selectNoFrom((eb) => eb.val(1).as('one')).execute()
    await opened.close()
    expect(lines.filter((l) => l.msg === 'database:pool_end_unfinished')).toEqual([])
  })

  it('goes on without a client that never comes back, and says so', async () => {
    const { log, lines } = capturingLogger()
    const opened = await openDatabase(config(), log, 2, { poolEndGraceMs: 200 })
    let lent!: () => void
    const isLent = new Promise<void>((resolve) => (lent = resolve))
    // A unit of work that holds its connection and never finishes.
    void opened.db.connection().execute(() => (lent(), new Promise<never>(() => {})))
    await isLent
    await opened.close() // before: never resolved
    expect(lines.filter((l) => l.msg === 'database:pool_end_unfinished')).toEqual([
      expect.objectContaining({ clients: 1, idle: 0, graceMs: 200 }),
    ])
  })
})
