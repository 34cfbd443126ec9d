/**
 * Where the ledger signing key lives, through real processes: `serve --role api` holds none and
 * refuses to sign over HTTP; a worker or `ledger checkpoint` whose data dir lacks the key the
 * ledger's checkpoints name stops in one line and makes no key; `ledger rotate-key` hands over
 * to a new key that the next checkpoint is signed with.
 */
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { removeDataDir, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { runCli, runInProcess, startServe } from './cli-process.js'

const root = mkdtempSync(path.join(tmpdir(), 'hookledger-signing-key-e2e-'))
let database: TestDatabase
// Every process of one install shares the master key; each has a data dir of its own.
const masterKey = encodeMasterKey(generateMasterKey())
const envOf = (name: string, extra: Record<string, string> = {}) => ({
  DATABASE_URL: database.url,
  HOOKLEDGER_DATA_DIR: path.join(root, name),
  HOOKLEDGER_MASTER_KEY: masterKey,
  LOG_LEVEL: 'warn',
  ...extra,
})
const keyIds = async () => (await sql<{ key_id: string }>`select key_id from ledger_checkpoints order by seq`.execute(database.db)).rows.map((r) => r.key_id)

beforeAll(async () => {
  database = await testDatabase()
})
afterAll(async () => {
  await database?.close()
  removeDataDir(root)
})

describe('the ledger signing key lives only where sealing runs', () => {
  it('an API-only serve cannot sign; a sealer without the key refuses to start; rotate-key hands over', async () => {
    const sealer = envOf('sealer')
    const first = await runInProcess(['ledger', 'checkpoint', '--json'], sealer)
    expect(first.code, first.stderr).toBe(0)
    const [keyId] = await keyIds()
    const publicKey = (await runInProcess(['ledger', 'public-key'], sealer)).stdout.trim()

    // Another host: no key in its data dir. The CLI and a worker refuse, in one line, and make none.
    const apiHost = envOf('api-host')
    const checkpoint = await runCli(['ledger', 'checkpoint'], apiHost)
    expect(checkpoint.code).toBe(1)
    expect(checkpoint.stderr.trim().split('\n')).toHaveLength(1)
    expect(checkpoint.stderr).toContain(path.join(apiHost.HOOKLEDGER_DATA_DIR, 'ledger-signing.key'))
    expect(checkpoint.stderr).toContain(`expected key id ${keyId}`)
    const worker = await runCli(['serve', '--role', 'worker'], apiHost)
    expect(worker.code).toBe(1)
    expect(worker.stderr.trim().split('\n')).toHaveLength(1)
    expect(worker.stderr).toContain(`expected key id ${keyId}`)
    expect(existsSync(path.join(apiHost.HOOKLEDGER_DATA_DIR, 'ledger-signing.key'))).toBe(false)

    // The API there starts, holds no key, refuses to sign, and reports the key it was given.
    const token = JSON.parse((await runInProcess(['token', 'create', '--scopes', 'operator', '--json'], apiHost)).stdout).token as string
    const serve = await startServe(['--role', 'api'], { ...apiHost, PORT: '0', HOOKLEDGER_LEDGER_PUBLIC_KEY: publicKey })
    try {
      const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const refused = await fetch(`${serve.url}/api/operator/ledger/checkpoints`, { method: 'POST', headers: auth, body: '{}' })
      expect(refused.status).toBe(409)
      expect(refused.headers.get('content-type')).toBe('application/problem+json')
      expect(await refused.json()).toMatchObject({ code: 'signing_key_unavailable' })
      const key = await fetch(`${serve.url}/api/operator/ledger/public_key`, { headers: auth })
      expect(await key.json()).toMatchObject({ vkey: publicKey, key_id: keyId, checkpoints: 1 })
    } finally {
      process.kill(serve.pid, 'SIGTERM')
      expect(await serve.exit, serve.output()).toBe(0)
    }
    expect(existsSync(path.join(apiHost.HOOKLEDGER_DATA_DIR, 'ledger-signing.key'))).toBe(false)
    expect(await keyIds()).toEqual([keyId])

    // Rotation where the key lives: the next checkpoint is the new key's.
    const rotated = await runCli(['ledger', 'rotate-key', '--json'], sealer)
    expect(rotated.code, rotated.stderr).toBe(0)
    const hand = JSON.parse(rotated.stdout) as { old_key_id: string; new_key_id: string; retired_file: string }
    expect(hand.old_key_id).toBe(keyId)
    expect(existsSync(hand.retired_file)).toBe(true)
    expect((await runInProcess(['ledger', 'checkpoint'], sealer)).code).toBe(0)
    expect(await keyIds()).toEqual([keyId, hand.new_key_id])
    const newPublicKey = (await runInProcess(['ledger', 'public-key'], sealer)).stdout.trim()
    expect(newPublicKey).not.toBe(publicKey)
    // Verification follows the hand-over: checkpoints of both keys verify, trusting either one.
    const verified = await runInProcess(['ledger', 'verify', '--full'], sealer)
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
    for (const trusted of [publicKey, newPublicKey]) {
      const withKey = await runInProcess(['ledger', 'verify', '--public-key', trusted], sealer)
      expect(withKey.code, withKey.stdout + withKey.stderr).toBe(0)
    }
    // And the snapshot, whose chain check follows it too.
    expect((await runInProcess(['ledger', 'snapshot'], sealer)).code).toBe(0)
  })
})
