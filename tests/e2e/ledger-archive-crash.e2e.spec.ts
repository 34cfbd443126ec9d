/**
 * `ledger archive` killed with SIGKILL while it writes its file: nothing has left the ledger
 * (the drop comes only after the file is complete, on disk and verified), `ledger verify` is
 * intact, the half-written file stays beside the name it was to take and blocks a second
 * archive until an operator removes it; removed, the archive runs to the end.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig, sealingLedgerKey } from '@hookledger/server'
import { eventually, removeDataDir, sealEverything, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { syntheticLedgerHistory } from '@hookledger/testkit/synthetic-ledger-history'
import { HOOKLEDGER_BIN, ROOT, runCli } from './cli-process.js'

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-archive-crash-'))
let t: TestDatabase | null = null
afterAll(async () => {
  await t?.close()
  removeDataDir(dir)
})

describe('ledger archive, killed mid-file', () => {
  it('drops nothing, leaves verify intact, and refuses to run over its own half-written file', async () => {
    t = await testDatabase()
    await syntheticLedgerHistory(t.db, { deliveries: 20_000, endpoints: 20 })
    const env = { DATABASE_URL: t.url, HOOKLEDGER_DATA_DIR: dir, LOG_LEVEL: 'warn' }
    await sealEverything(t.db, await sealingLedgerKey(loadConfig(env), t.db), () => new Date())
    const rows = async () => (await sql<{ n: string }>`select count(*)::text as n from ledger`.execute(t!.db)).rows[0]!.n
    const before = await rows()
    const latest = (await sql<{ seq: string }>`select max(seq)::text as seq from ledger_checkpoints`.execute(t.db)).rows[0]!.seq

    const file = path.join(dir, 'archive.jsonl')
    const partial = `${file}.partial`
    const child = spawn(HOOKLEDGER_BIN, ['ledger', 'archive', '--before', latest, '--out', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'ignore' })
    const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)))
    // Killed once it has written part of the file (it flushes every 1,000 lines).
    await eventually('the archive to be half written', () => existsSync(partial) && statSync(partial).size > 100_000, { everyMs: 5 })
    child.kill('SIGKILL')
    expect(await exit).toBe('SIGKILL')

    expect(existsSync(file)).toBe(false)
    expect(await rows()).toBe(before)
    expect((await sql`select 1 from ledger where kind = 'ledger.retention'`.execute(t.db)).rows).toEqual([])
    const verify = await runCli(['ledger', 'verify'], env)
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)

    const again = await runCli(['ledger', 'archive', '--before', latest, '--out', file], env)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('a .partial file of')
    rmSync(partial)
    const done = await runCli(['ledger', 'archive', '--before', latest, '--out', file], env)
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(done.stdout).toContain(`archived checkpoints 1–${Number(latest) - 1}`)
    // Several CLI processes and a 20,000-delivery history: slow on a loaded 2-core machine.
  }, 180_000)
})
