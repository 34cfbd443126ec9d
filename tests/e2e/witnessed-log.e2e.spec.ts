import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '@hookledger/core'
import {
  ed25519NoteVerifier,
  generateLedgerSigningKey,
  ledgerVerifierKey,
  parseLedgerSigningKey,
  parseTlogPolicy,
  servedCheckpoint,
  verifyCheckpointWithPolicy,
  type TlogPolicy,
} from '@hookledger/ledger'
import { LedgerSealerLoop, WitnessSubmitter } from '@hookledger/worker'
import { ledgerVerifyCommand } from '@hookledger/cli'
import { createWitnessApp, openWitnessStateFile, witnessKeyInfo } from '@hookledger/witness'
import { bypassLedgerGuards, rollLedgerBack, sealEverything, syntheticLedgerHistory, testDatabase, type TestDatabase } from '@hookledger/testkit'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)

/**
 * The log and a real witness (`@hookledger/witness`, over HTTP on loopback): each checkpoint is
 * cosigned and served with its quorum; a history rewritten and re-signed by whoever holds the
 * database and the key is refused by the witness, and the log raises its alert and stops signing.
 */
describe('a witnessed log', () => {
  let database: TestDatabase
  let server: ServerType
  let policy: TlogPolicy
  let origin = ''
  const witness = { name: 'witness.test/w1', seed: new Uint8Array(randomBytes(32)) }
  const events: { status: number; reason: string }[] = []

  const addRows = (n: number, tag: string) =>
    bypassLedgerGuards(database.db, (trx) =>
      sql`insert into ledger (occurred_at, owner_id, kind, payload, actor)
          select now(), 'syn', 'endpoint.disabled', jsonb_build_object('tag', ${tag}::text, 'i', i), 'operator' from generate_series(1, ${n}) i`.execute(trx),
    )
  const size = async () => Number((await sql<{ total: string }>`select coalesce(max(total), 0)::text as total from ledger_checkpoints`.execute(database.db)).rows[0]!.total)
  const submitter = (onOutcome?: (o: { outcome: string }) => void) =>
    new WitnessSubmitter({ db: database.db, witnesses: [...policy.witnesses.values()], clock: systemClock, ...(onOutcome ? { onOutcome } : {}) })

  beforeAll(async () => {
    database = await testDatabase()
    await syntheticLedgerHistory(database.db, { deliveries: 20, endpoints: 2 })
    await sealEverything(database.db, key, () => new Date(), { maxRows: 40 })
    origin = (await sql<{ origin: string }>`select origin from ledger_log`.execute(database.db)).rows[0]!.origin
    const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-witness-'))
    const state = await openWitnessStateFile(path.join(dir, 'state.json'))
    const app = createWitnessApp({ key: witness, logs: [ledgerVerifierKey(origin, key.publicKey)], state, clock: systemClock, onEvent: (e) => events.push(e) })
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port))
    })
    policy = parseTlogPolicy(`witness w1 ${witnessKeyInfo(witness).vkey} http://127.0.0.1:${port}\nquorum w1\n`)
  })
  afterAll(async () => {
    server?.close()
    await database?.close()
  })

  it('the newest checkpoint is cosigned, kept, and served with its quorum', async () => {
    expect(await submitter().submit()).toEqual([{ witness: 'w1', outcome: 'cosigned', size: await size() }])
    const served = (await servedCheckpoint(database.db, policy))!
    expect(served).toMatchObject({ quorum: true, witnesses: ['w1'], size: await size() })
    const opened = verifyCheckpointWithPolicy(policy, served.note, [ed25519NoteVerifier(ledgerVerifierKey(origin, key.publicKey))])
    expect([...opened.witnesses]).toEqual(['w1'])
  })

  it('the log grows and the witness follows, from the size it holds (a 409 first, for a log that forgot it)', async () => {
    await addRows(30, 'growth')
    await sealEverything(database.db, key, () => new Date())
    const fresh = submitter()
    expect(await fresh.submit()).toEqual([{ witness: 'w1', outcome: 'cosigned', size: await size() }])
    expect(events.map((e) => e.status)).toContain(409)
    await addRows(5, 'more')
    await sealEverything(database.db, key, () => new Date())
    expect((await fresh.submit())[0]).toMatchObject({ outcome: 'cosigned' })
    expect(events.at(-1)).toMatchObject({ status: 200 })
  })

  it('without its quorum the served checkpoint says so, and a policy verifier refuses it', async () => {
    const two = parseTlogPolicy(
      `witness w1 ${witnessKeyInfo(witness).vkey}\nwitness w2 ${witnessKeyInfo({ name: 'witness.test/w2', seed: new Uint8Array(32).fill(9) }).vkey}\ngroup both all w1 w2\nquorum both\n`,
    )
    const served = (await servedCheckpoint(database.db, two))!
    expect(served.quorum).toBe(false)
    expect(() => verifyCheckpointWithPolicy(two, served.note, [ed25519NoteVerifier(ledgerVerifierKey(origin, key.publicKey))])).toThrow(/quorum/)
  })

  it('ledger verify --policy: exit 0 when the served checkpoint carries the quorum, 1 when it does not', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-policy-'))
    const met = path.join(dir, 'met.policy')
    const unmet = path.join(dir, 'unmet.policy')
    writeFileSync(met, `witness w1 ${witnessKeyInfo(witness).vkey}\nquorum w1\n`)
    writeFileSync(unmet, `witness w1 ${witnessKeyInfo(witness).vkey}\nwitness w2 ${witnessKeyInfo({ name: 'witness.test/w2', seed: new Uint8Array(32).fill(9) }).vkey}\ngroup both all w1 w2\nquorum both\n`)
    const run = async (file: string) => {
      const lines: string[] = []
      const io = { out: (l: string) => void lines.push(l), err: (l: string) => void lines.push(l) }
      const code = await ledgerVerifyCommand(async () => ({ db: database.db, close: async () => {} }), io, { policy: file, 'public-key': ledgerVerifierKey(origin, key.publicKey), 'chain-only': true })
      return { code, text: lines.join('\n') }
    }
    const ok = await run(met)
    expect(ok.code, ok.text).toBe(0)
    expect(ok.text).toMatch(/witnessed: the checkpoint of \d+ rows carries the policy's quorum \(w1\)/)
    const refused = await run(unmet)
    expect(refused.code, refused.text).toBe(1)
    expect(refused.text).toMatch(/TAMPERED witness quorum: .*does not carry the policy's quorum/)
  })

  it('a rewritten history, re-signed with the key, is refused by the witness (422), and the log counts it', async () => {
    const witnessed = await size()
    await rollLedgerBack(database.db, witnessed - 10)
    await addRows(60, 'rewritten') // larger than what the witness holds, but not an extension of it
    await sealEverything(database.db, key, () => new Date())
    expect(await size()).toBeGreaterThan(witnessed)
    const outcomes: string[] = []
    const [outcome] = await submitter((o) => outcomes.push(o.outcome)).submit()
    expect(outcome).toMatchObject({ outcome: 'failed' })
    expect((outcome as { reason: string }).reason).toMatch(/HTTP 422/)
    expect(events.at(-1)).toMatchObject({ status: 422 })
    expect(outcomes).toEqual(['failed'])
  })

  it('a log rolled back behind its witness: the alert is raised and the sealer signs nothing new', async () => {
    const before = await rollLedgerBack(database.db, 60)
    expect(await size()).toBe(before)
    const sub = submitter()
    const [outcome] = await sub.submit()
    expect(outcome).toMatchObject({ outcome: 'rolled_back', logSize: before })
    expect(sub.rolledBack).toMatch(/the log was rolled back/)
    await addRows(3, 'after the rollback')
    const loop = new LedgerSealerLoop({ db: database.db, key, clock: systemClock, intervalMs: 60_000, witnesses: submitter() })
    expect(await loop.sealOnce()).toBe(0)
    expect(await size()).toBe(before)
    // Without witnesses the same ledger would have been signed: the stop is the witness's doing.
    await sealEverything(database.db, key, () => new Date())
    expect(await size()).toBeGreaterThan(before)
  })
})
