/**
 * The ledger signing key lives only where sealing runs (real PostgreSQL): an API-only process
 * never reads it and refuses the ops that sign; a sealing process refuses to start without the
 * key the last checkpoint names, and makes one only while the ledger has no checkpoint;
 * `rotate-key` hands over to a new key that the sealing check and the public-key lookups follow.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import {
  generateLedgerSigningKey,
  ledgerKeysTrustedFrom,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  signKeyRotation,
  verifyKeyRotation,
  type LedgerSigningKey,
  ledgerSeal,
} from '@hookledger/ledger'
import { createApi } from '@hookledger/api'
import { apiTokenCreate } from '@hookledger/store'
import { testDatabase, type TestDatabase } from '@hookledger/testkit'
import { loadConfig } from './config.js'
import { readLedgerSigningKeyFile, stageLedgerSigningKey } from './key-files.js'
import { appendLedgerKeyRotation, readLedgerKeyRotations } from './ledger-key-rotations-file.js'
import { rotateLedgerSigningKey } from './ledger-key-rotate.js'
import { createLedgerKeys, sealingLedgerKey } from './ledger-keys.js'
import { createLogger, createOpDeps } from './service.js'
import { StartupError } from './startup-error.js'

let database: TestDatabase
const root = mkdtempSync(path.join(tmpdir(), 'hookledger-signing-key-'))
const masterKey = encodeMasterKey(generateMasterKey())
const clock = { now: () => new Date('2026-12-01T09:00:00.000Z') }
let operator = ''

/** A data dir of its own under `root`, and the config of a process using it. */
function processWith(name: string, env: Record<string, string> = {}) {
  const dir = path.join(root, name)
  mkdirSync(dir, { recursive: true })
  return { dir, config: loadConfig({ DATABASE_URL: database.url, HOOKLEDGER_DATA_DIR: dir, HOOKLEDGER_MASTER_KEY: masterKey, LOG_LEVEL: 'silent', ...env }) }
}

const checkpointKeyIds = async () => (await sql<{ key_id: string }>`select key_id from ledger_checkpoints order by seq`.execute(database.db)).rows.map((r) => r.key_id)
const refusal = (promise: Promise<unknown>) => promise.then(() => expect.fail('expected a refusal'), (err: unknown) => (expect(err).toBeInstanceOf(StartupError), (err as Error).message))

beforeAll(async () => {
  database = await testDatabase()
  operator = (await apiTokenCreate(database.db, { owner_id: '*', scopes: ['operator'], now: new Date() })).token
})
afterAll(async () => {
  await database?.close()
  rmSync(root, { recursive: true, force: true })
})

describe('the signing key lives only where sealing runs', () => {
  let sealerKey: LedgerSigningKey

  it('an API-only process holds no key: the ops that sign answer 409 signing_key_unavailable, and no checkpoint is made', async () => {
    // A key file it would fail to read, and a signing key setting: neither is touched.
    const api = processWith('api', { HOOKLEDGER_LEDGER_SIGNING_KEY: generateLedgerSigningKey().secret })
    writeFileSync(path.join(api.dir, 'ledger-signing.key'), 'not a key\n')
    const deps = createOpDeps(api.config, database.db, createLogger(api.config), clock)
    expect(await deps.ledgerKeys.signing()).toBeNull()
    const app = createApi({ deps })
    const call = (method: string, url: string, body?: unknown) =>
      app.fetch(new Request(`http://hookledger.test${url}`, { method, headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) }))

    for (const url of ['/api/operator/ledger/checkpoints', '/api/operator/ledger/snapshots']) {
      const answer = await call('POST', url, {})
      expect(answer.status, url).toBe(409)
      expect(answer.headers.get('content-type')).toBe('application/problem+json')
      expect(await answer.json()).toMatchObject({ status: 409, code: 'signing_key_unavailable' })
    }
    expect(await checkpointKeyIds()).toEqual([])
    // No public key known either (the setting's key is not read to derive one).
    const unknown = await call('GET', '/api/operator/ledger/public_key')
    expect(unknown.status).toBe(409)
    expect(await unknown.json()).toMatchObject({ code: 'ledger_public_key_unavailable' })
  })

  it('the first sealing process makes the key once; an API-only process then reports and verifies with the public key the checkpoints name', async () => {
    const sealer = processWith('sealer')
    sealerKey = await sealingLedgerKey(sealer.config, database.db)
    expect(readFileSync(path.join(sealer.dir, 'ledger-signing.key'), 'utf8')).toMatch(/^hlsk_/)
    expect(readFileSync(path.join(sealer.dir, 'ledger-signing.pub'), 'utf8').trim()).toBe(sealerKey.publicKey)
    await ledgerSeal(database.db, { key: sealerKey, now: clock.now(), force: true })
    expect(await checkpointKeyIds()).toEqual([sealerKey.keyId])
    // The same data dir again: the same key.
    expect((await sealingLedgerKey(sealer.config, database.db)).keyId).toBe(sealerKey.keyId)

    const api = processWith('api-elsewhere', { HOOKLEDGER_LEDGER_PUBLIC_KEY: sealerKey.publicKey })
    const app = createApi({ deps: createOpDeps(api.config, database.db, createLogger(api.config), clock) })
    const auth = { authorization: `Bearer ${operator}`, 'content-type': 'application/json' }
    const key = await app.fetch(new Request('http://hookledger.test/api/operator/ledger/public_key', { headers: auth }))
    expect(key.status).toBe(200)
    expect(await key.json()).toMatchObject({ public_key: sealerKey.publicKey, key_id: sealerKey.keyId, checkpoints: 1 })
    const verified = await app.fetch(new Request('http://hookledger.test/api/operator/ledger/verify', { method: 'POST', headers: auth, body: JSON.stringify({ chain_only: true }) }))
    expect(await verified.json()).toMatchObject({ ok: true, checkpoints: 1 })
    // Or from the public-key file beside the key, on the sealer's host.
    const beside = createLedgerKeys(sealer.config, database.db, { kind: 'none' })
    expect(await beside.publicKey()).toEqual({ publicKey: sealerKey.publicKey, keyId: sealerKey.keyId })
    expect(await beside.signing()).toBeNull()
  })

  it('a sealer without the key, or with another, refuses to start in one line naming the file or setting and the key id expected', async () => {
    const bare = processWith('bare')
    const missing = await refusal(sealingLedgerKey(bare.config, database.db))
    expect(missing).toContain(path.join(bare.dir, 'ledger-signing.key'))
    expect(missing).toContain(`expected key id ${sealerKey.keyId}`)
    expect(missing).not.toContain('\n')
    // It never makes one once a checkpoint exists.
    expect(existsSync(path.join(bare.dir, 'ledger-signing.key'))).toBe(false)

    const other = processWith('other')
    writeFileSync(path.join(other.dir, 'ledger-signing.key'), generateLedgerSigningKey().secret + '\n')
    expect(await refusal(sealingLedgerKey(other.config, database.db))).toMatch(
      new RegExp(`^the ledger signing key of ${other.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/ledger-signing.key has key id [0-9a-f]{16}, but the ledger's last checkpoint is signed by key id ${sealerKey.keyId}: use that key \\(expected key id ${sealerKey.keyId}\\)$`),
    )
    const setting = processWith('setting', { HOOKLEDGER_LEDGER_SIGNING_KEY: generateLedgerSigningKey().secret })
    expect(await refusal(sealingLedgerKey(setting.config, database.db))).toMatch(/^the ledger signing key of HOOKLEDGER_LEDGER_SIGNING_KEY has key id/)

    // A CLI op that signs, in such a data dir, answers the refusal as its code.
    const op = createOpDeps(bare.config, database.db, createLogger(bare.config), clock, { signingKey: { kind: 'on-demand' } })
    await expect(op.ledgerKeys.signing()).rejects.toMatchObject({ code: 'signing_key_unavailable', message: expect.stringContaining(`expected key id ${sealerKey.keyId}`) })
  })

  it('rotate-key hands over to a new key: it seals next, the old one is retired, and every key stays known by its id', async () => {
    const sealer = processWith('sealer')
    const rotated = await rotateLedgerSigningKey(sealer.config, database.db, clock)
    expect(rotated).toMatchObject({ oldKeyId: sealerKey.keyId, rotatedAt: '2026-12-01T09:00:00.000Z', resumed: false })
    expect(readFileSync(rotated.retiredFile, 'utf8').trim()).toMatch(/^hlsk_/)
    expect(rotated.retiredFile).toBe(path.join(sealer.dir, `ledger-signing.key.${sealerKey.keyId}.retired`))
    const { records, handOvers, rejected } = readLedgerKeyRotations(sealer.config)
    expect(rejected).toEqual([])
    expect(records).toHaveLength(1)
    expect(verifyKeyRotation(records[0]).ok).toBe(true)
    expect(readFileSync(path.join(sealer.dir, 'ledger-signing.pub'), 'utf8').trim()).toBe(rotated.publicKey)

    // The last checkpoint still names the old key: the new one is its successor, so it seals.
    const next = await sealingLedgerKey(sealer.config, database.db)
    expect(next.keyId).toBe(rotated.newKeyId)
    await ledgerSeal(database.db, { key: next, now: clock.now(), force: true })
    expect(await checkpointKeyIds()).toEqual([sealerKey.keyId, next.keyId])
    const trusted = ledgerKeysTrustedFrom(parseLedgerPublicKey(sealerKey.publicKey), handOvers)
    expect([...trusted.keys()]).toEqual([sealerKey.keyId, next.keyId])

    // The old key, where the hand-over is known, is refused as retired.
    const stale = processWith('stale')
    copyFileSync(rotated.retiredFile, path.join(stale.dir, 'ledger-signing.key'))
    copyFileSync(rotated.rotationsFile, path.join(stale.dir, 'ledger-key-rotations.json'))
    const retired = await refusal(sealingLedgerKey(stale.config, database.db))
    expect(retired).toContain(`expected key id ${next.keyId}`)

    // Public halves by id, for any process: the old key's comes from the hand-over record.
    const api = createLedgerKeys(sealer.config, database.db, { kind: 'none' })
    expect(await api.publicKey()).toEqual({ publicKey: next.publicKey, keyId: next.keyId })
    expect(await api.publicKey(sealerKey.keyId)).toEqual({ publicKey: sealerKey.publicKey, keyId: sealerKey.keyId })
    expect(await api.publicKey('0000000000000000')).toBeNull()
  })

  it('a rotation cut short after its record is refused at the next start, and finished by running rotate-key again with the key it made', async () => {
    const sealer = processWith('sealer')
    const current = readLedgerSigningKeyFile(sealer.config)!
    const made = generateLedgerSigningKey().secret
    const staged = parseLedgerSigningKey(made)
    // What rotate-key does before its swap: the new key staged, the hand-over recorded.
    stageLedgerSigningKey(sealer.config, made)
    appendLedgerKeyRotation(sealer.config, signKeyRotation(current, staged, clock.now()))
    expect(await refusal(sealingLedgerKey(sealer.config, database.db))).toContain(`expected key id ${staged.keyId}`)

    const finished = await rotateLedgerSigningKey(sealer.config, database.db, clock)
    expect(finished).toMatchObject({ oldKeyId: current.keyId, newKeyId: staged.keyId, resumed: true })
    expect((await sealingLedgerKey(sealer.config, database.db)).keyId).toBe(staged.keyId)
    expect(existsSync(path.join(sealer.dir, 'ledger-signing.key.new'))).toBe(false)
    expect(readLedgerKeyRotations(sealer.config).handOvers).toHaveLength(2)
  })

  it('rotate-key refuses a key from the setting, and a data dir with no key', async () => {
    const setting = processWith('rotate-setting', { HOOKLEDGER_LEDGER_SIGNING_KEY: generateLedgerSigningKey().secret })
    expect(await refusal(rotateLedgerSigningKey(setting.config, database.db, clock))).toMatch(/comes from HOOKLEDGER_LEDGER_SIGNING_KEY/)
    const bare = processWith('rotate-bare')
    expect(await refusal(rotateLedgerSigningKey(bare.config, database.db, clock))).toMatch(/no ledger signing key at .* to rotate/)
  })
})
