import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig, sealingLedgerKey } from '@hookledger/server'
import { bypassLedgerGuards, engineHarness, removeDataDir, sealEverything, type EngineHarness } from '@hookledger/testkit'
import { generateLedgerSigningKey } from '@hookledger/ledger'
import { runCli, runInProcess } from './cli-process.js'

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-verify-e2e-'))
let h: EngineHarness | null = null
afterAll(async () => {
  await h?.close()
  removeDataDir(dir)
})

describe('ledger checkpoint / verify / export / public-key, through the real CLI', () => {
  it('exit 0 intact, 1 tampered naming the position, 2 usage; exports and receipts verify offline', async () => {
    h = await engineHarness({ reply: { status: 503 } })
    await h.createEndpoint()
    await h.publish({ id: 'evt_1' })
    await h.step()
    h.clock.advance(3_600_000)
    h.receiver.enqueue({ status: 204 })
    await h.step()
    const env = { DATABASE_URL: h.url, HOOKLEDGER_DATA_DIR: dir, LOG_LEVEL: 'warn' }

    const sealed = await runInProcess(['ledger', 'checkpoint', '--json'], env)
    expect(sealed.code, sealed.stderr).toBe(0)
    expect(JSON.parse(sealed.stdout).checkpoints[0]).toMatchObject({ seq: 1 })
    // Other test files share the cluster: their open transactions may hold the seal back a moment.
    await sealEverything(h.db, await sealingLedgerKey(loadConfig(env), h.db), () => h!.clock.now())
    const intact = await runCli(['ledger', 'verify'], env)
    expect(intact.stdout).toContain('chain intact')
    expect(intact.stdout).toContain('no differences')
    expect(intact.code, intact.stdout + intact.stderr).toBe(0)
    expect(intact.stdout).toMatch(/tree intact: log \S+ of \d+ rows/)
    // A malformed id is said as such, with usage where it helps (a raw 22P02, and usage alone, before).
    const badAudit = await runInProcess(['ledger', 'audit', '--delivery', 'not-a-uuid'], env)
    expect(badAudit.code).toBe(2)
    expect(badAudit.stderr).toContain('--delivery "not-a-uuid" is not a delivery id (a UUID')
    expect(badAudit.stderr + badAudit.stdout).not.toContain('22P02')
    const badRevoke = await runInProcess(['token', 'revoke', 'nope'], env)
    expect(badRevoke.code).toBe(2)
    expect(badRevoke.stderr).toMatch(/"nope" is not a token id .*\nusage: hookledger token revoke <token id>/)
    // Another key: said once, exit 1 (it used to print checkpoint_signature_bad per checkpoint).
    const otherKey = await runInProcess(['ledger', 'verify', '--chain-only', '--public-key', generateLedgerSigningKey().publicKey], env)
    expect(otherKey.code).toBe(1)
    expect(otherKey.stdout.split('\n').filter((l) => l.startsWith('TAMPERED'))).toEqual([expect.stringMatching(/^TAMPERED signed by another key: none of the \d+ checkpoints verifies/)])

    const [claimed] = (await sql<{ position: string }>`select position::text from ledger where kind = 'delivery.claimed' order by position limit 1`.execute(h.db)).rows
    await bypassLedgerGuards(h.db, (trx) => sql`update ledger set actor = 'someone' where position = ${claimed!.position}::bigint`.execute(trx))
    const tampered = await runCli(['ledger', 'verify', '--chain-only'], env)
    expect(tampered.code).toBe(1)
    expect(tampered.stdout).toContain(`TAMPERED row_changed at position ${claimed!.position}`)
    expect(tampered.stdout).toContain(`first bad position: ${claimed!.position}`)
    await bypassLedgerGuards(h.db, (trx) =>
      sql`update ledger set actor = 'worker:harness' where position = ${claimed!.position}::bigint`.execute(trx),
    )
    expect((await runInProcess(['ledger', 'verify', '--chain-only'], env)).code).toBe(0)

    // An export, checked with the public key alone.
    const publicKey = (await runInProcess(['ledger', 'public-key'], env)).stdout.trim()
    // The log's verifier key (vkey): <origin>+<key id>+<base64(0x01 ‖ key)>, what any note verifier takes.
    expect(publicKey).toMatch(/^[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/)
    const described = JSON.parse((await runInProcess(['ledger', 'public-key', '--json'], env)).stdout) as { vkey: string; origin: string; key_id: string; public_key: string }
    expect(described).toMatchObject({ vkey: publicKey, key_id: publicKey.split('+')[1] })
    expect(described.public_key).toMatch(/^hlpk_/)
    const exported = await runInProcess(['ledger', 'export'], env)
    const exportFile = path.join(dir, 'ledger.jsonl')
    writeFileSync(exportFile, exported.stdout)
    const offline = await runCli(['ledger', 'verify', '--file', exportFile, '--public-key', publicKey], { ...env, DATABASE_URL: 'postgres://nowhere.invalid/x' })
    expect(offline.code, offline.stdout + offline.stderr).toBe(0)
    expect(offline.stdout).toContain('export intact')
    writeFileSync(exportFile, exported.stdout.replace('"status_code":503', '"status_code":504'))
    expect((await runInProcess(['ledger', 'verify', '--file', exportFile, '--public-key', publicKey], env)).code).toBe(1)

    // A receipt for the delivery, from the owner op, checked offline.
    const delivery = await h.deliveryOf('evt_1')
    const receipt = await runInProcess(['op', 'webhooks.receipt', '--owner', 'default', '--json', JSON.stringify({ id: delivery.id })], env)
    expect(receipt.code, receipt.stderr).toBe(0)
    const receiptFile = path.join(dir, 'receipt.json')
    writeFileSync(receiptFile, receipt.stdout)
    const proven = await runInProcess(['ledger', 'verify', '--receipt', receiptFile, '--public-key', publicKey], env)
    expect(proven.stdout).toContain('receipt intact')
    expect(proven.code).toBe(0)
    writeFileSync(receiptFile, readFileSync(receiptFile, 'utf8').replace('"status_code": 503', '"status_code": 200'))
    expect(readFileSync(receiptFile, 'utf8')).toContain('"status_code": 200')
    expect((await runInProcess(['ledger', 'verify', '--receipt', receiptFile, '--public-key', publicKey], env)).code).toBe(1)
    // The same rows as .tlog-proof files, each checkable on its own; exit 3 while rows are unsealed.
    const proofs = path.join(dir, 'receipt')
    const written = await runInProcess(['ledger', 'receipt', '--delivery', delivery.id, '--out', proofs], env)
    expect([0, 3], written.stdout + written.stderr).toContain(written.code)
    const files = readdirSync(proofs).filter((f) => f.endsWith('.tlog-proof'))
    expect(files.length).toBeGreaterThan(1)
    expect(readFileSync(path.join(proofs, files[0]!), 'utf8')).toMatch(/^c2sp\.org\/tlog-proof@v1\nextra [A-Za-z0-9+/=]+\nindex \d+\n/)
    const dirProven = await runCli(['ledger', 'verify', '--receipt', proofs, '--public-key', described.public_key], { ...env, DATABASE_URL: 'postgres://nowhere.invalid/x' })
    expect(dirProven.code, dirProven.stdout + dirProven.stderr).toBe(0)
    expect(dirProven.stdout).toContain(`receipt intact: ${files.length} rows proven`)
    const one = path.join(proofs, files[0]!)
    writeFileSync(one, readFileSync(one, 'utf8').replace(/\nindex (\d+)\n/, (_m, i: string) => `\nindex ${Number(i) + 1}\n`))
    expect((await runInProcess(['ledger', 'verify', '--receipt', one, '--public-key', publicKey], env)).code).toBe(1)
    expect((await runInProcess(['ledger', 'receipt', '--delivery', 'not-a-uuid', '--out', proofs], env)).code).toBe(2)
    const foreign = await runInProcess(['op', 'webhooks.receipt', '--owner', 'globex', '--json', JSON.stringify({ id: delivery.id })], env)
    expect(foreign.code).toBe(1)
    expect(foreign.stderr).toContain('not_found')

    const usage = await runInProcess(['ledger', 'verify', '--file', exportFile, '--receipt', receiptFile, '--public-key', publicKey], env)
    expect(usage.code).toBe(2)
    expect((await runInProcess(['ledger', 'verify', '--file', exportFile, '--public-key', 'hlpk_nope'], env)).code).toBe(2)
    // The signing key itself never leaves the data dir.
    const secret = readFileSync(path.join(dir, 'ledger-signing.key'), 'utf8').trim()
    expect(secret).toMatch(/^hlsk_/)
    for (const out of [sealed, intact, exported, receipt]) expect(out.stdout + out.stderr).not.toContain(secret)
    const stored = JSON.stringify((await sql`select * from ledger_checkpoints`.execute(h.db)).rows)
    expect(stored).not.toContain(secret)
  })
})
