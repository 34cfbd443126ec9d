import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig, sealingLedgerKey } from '@hookledger/server'
import { ledgerPartitions, ledgerPartitionsAhead } from '@hookledger/ledger'
import { adminDbOf, engineHarness, removeDataDir, sealEverything, type EngineHarness } from '@hookledger/testkit'
import { runCli, runInProcess } from './cli-process.js'

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-archive-e2e-'))
let h: EngineHarness | null = null
afterAll(async () => {
  await h?.close()
  removeDataDir(dir)
})

describe('ledger snapshot / archive, through the real CLI', () => {
  it('snapshots, archives to a file that verifies offline, and verify stays intact from the snapshot', async () => {
    h = await engineHarness()
    // Small partitions, so the archive has whole ones to drop.
    const last = (await ledgerPartitions(h.db)).filter((p) => !p.isDefault).at(-1)!
    await sql`alter table ledger alter column position restart with ${sql.lit(Number(last.to))}`.execute(adminDbOf(h.db))
    await ledgerPartitionsAhead(h.db, { rowsPerPartition: 10, ahead: 30 })
    await h.createEndpoint()
    for (let i = 0; i < 8; i++) await h.publish({ id: `evt_${i}` })
    await h.step()
    const env = { DATABASE_URL: h.url, HOOKLEDGER_DATA_DIR: dir, LOG_LEVEL: 'warn' }
    const key = await sealingLedgerKey(loadConfig(env), h.db)
    await sealEverything(h.db, key, () => h!.clock.now(), { maxRows: 10 })

    const snapshot = await runInProcess(['ledger', 'snapshot'], env)
    expect(snapshot.code, snapshot.stderr).toBe(0)
    expect(snapshot.stdout).toMatch(/^snapshot 1 below position \d+: 1 endpoints, 8 deliveries .* signed by checkpoint \d+, digest [0-9a-f]{64}$/m)

    for (let i = 8; i < 12; i++) await h.publish({ id: `evt_${i}` })
    await h.step()
    await sealEverything(h.db, key, () => h!.clock.now(), { maxRows: 10 })
    const usage = await runInProcess(['ledger', 'archive'], env)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('--before must be a checkpoint seq')

    const file = path.join(dir, 'archive.jsonl')
    const archived = await runCli(['ledger', 'archive', '--before', '4', '--out', file], env)
    expect(archived.code, archived.stdout + archived.stderr).toBe(0)
    expect(archived.stdout).toMatch(/^archived checkpoints 1–3 \(\d+ rows\) to .*archive\.jsonl, sha256 [0-9a-f]{64}$/m)
    expect(archived.stdout).toMatch(/^dropped \d+ ledger partitions \(\d+ rows\) below position \d+; replay and verify start from snapshot \d+$/m)

    const publicKey = (await runInProcess(['ledger', 'public-key'], env)).stdout.trim()
    const offline = await runCli(['ledger', 'verify', '--file', file, '--public-key', publicKey], { ...env, DATABASE_URL: 'postgres://nowhere.invalid/x' })
    expect(offline.code, offline.stdout + offline.stderr).toBe(0)
    expect(offline.stdout).toContain('export intact')
    // An archived delivery's history (one completed within the archived checkpoints), read from the file alone.
    const completed = readFileSync(file, 'utf8').split('\n').find((l) => l.includes('"kind":"delivery.attempted"') && l.includes('"completes":true'))!
    const deliveryId = (JSON.parse(completed) as { row: { delivery_id: string } }).row.delivery_id
    const audit = await runCli(['ledger', 'audit', '--file', file, '--delivery', deliveryId], { ...env, DATABASE_URL: 'postgres://nowhere.invalid/x' })
    expect(audit.code, audit.stderr).toBe(0)
    // Its enqueue is its event's fan-out decision (ledger format 3), named through the pair.
    expect(audit.stdout.trim().split('\n').map((l) => l.split(/\s+/)[2])).toEqual(['fanout.decided', 'delivery.claimed', 'delivery.attempted'])
    const forged = path.join(dir, 'forged.jsonl')
    writeFileSync(forged, readFileSync(file, 'utf8').replace('"kind":"delivery.claimed"', '"kind":"delivery.completed"'))
    expect((await runInProcess(['ledger', 'verify', '--file', forged, '--public-key', publicKey], env)).code).toBe(1)

    await sealEverything(h.db, key, () => h!.clock.now())
    for (const args of [['ledger', 'verify'], ['ledger', 'verify', '--full']]) {
      const intact = await runInProcess(args, env)
      expect(intact.code, intact.stdout + intact.stderr).toBe(0)
      expect(intact.stdout).toMatch(/^chain: \d+ rows after checkpoint \d+ \((the archive|the latest snapshot); \d+ earlier checkpoints checked by signature and links\)/m)
      expect(intact.stdout).toMatch(/^replay: \d+ rows from snapshot \d+ \(position \d+\), no differences$/m)
    }
    const full = await runInProcess(['ledger', 'replay', '--verify', '--full'], env)
    expect(full.code).toBe(2)
    expect(full.stderr).toContain('is archived')
    const again = await runInProcess(['ledger', 'archive', '--before', '3', '--out', path.join(dir, 'again.jsonl')], env)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('no archive: checkpoints up to 3 are archived already')
  })
})
