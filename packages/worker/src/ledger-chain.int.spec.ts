import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  generateLedgerSigningKey,
  LedgerExportVerifier,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  verifyLedgerReceipt,
  type LedgerReceipt,
  ledgerChainVerify,
  ledgerExport,
  ledgerReceipt,
  ledgerSeal,
  type LedgerExportLine,
} from '@hookledger/ledger'
import { bypassLedgerGuards, engineHarness, sealEverything, type EngineHarness } from '@hookledger/testkit'
import nacl from 'tweetnacl'

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const publicKey = parseLedgerPublicKey(key.publicKey)

/**
 * The hash chain and signed checkpoints catch what the triggers cannot stop: a superuser
 * editing the ledger with triggers off. Each forgery is named at its position; undone, the
 * ledger verifies again.
 */
describe('ledger verify: the chain and signed checkpoints', () => {
  let h: EngineHarness
  let retried = ''
  beforeAll(async () => {
    h = await engineHarness({ reply: { status: 503 } })
    await h.createEndpoint()
    await h.publish({ id: 'evt_chain_a' })
    await h.step() // 503: snoozed or retried
    h.receiver.enqueue({ status: 500 })
    h.clock.advance(3_600_000)
    await h.step()
    h.receiver.enqueue({ status: 500 })
    h.clock.advance(3_600_000)
    await h.step()
    retried = (await h.deliveryOf('evt_chain_a')).id
    await h.publish({ id: 'evt_chain_b' })
    h.clock.advance(3_600_000)
    await h.step()
    const sealed = await sealEverything(h.db, key, () => h.clock.now(), { maxRows: 7 })
    expect(sealed.checkpoints).toBeGreaterThan(1)
    expect((await ledgerChainVerify(h.db, { publicKey })).ok).toBe(true)
  })
  afterAll(() => h.close())

  const rowsOf = async (kind: string) =>
    (await sql<{ position: string; tx_id: string }>`select position::text, tx_id::text from ledger where kind = ${kind} order by position`.execute(h.db)).rows

  /** Applies a forgery, checks verify names it, undoes it, checks verify is clean again. */
  async function forged(doIt: string, undo: string, expected: { kind: string | string[]; position: string | null | string[] }) {
    await bypassLedgerGuards(h.db, (trx) => sql.raw(doIt).execute(trx))
    try {
      const report = await ledgerChainVerify(h.db, { publicKey })
      expect(report.ok).toBe(false)
      const positions = Array.isArray(expected.position) ? expected.position : [expected.position]
      const kinds = Array.isArray(expected.kind) ? expected.kind : [expected.kind]
      const named = report.problems.filter((p) => kinds.includes(p.kind) && positions.includes(p.position))
      expect(named, JSON.stringify(report.problems)).not.toEqual([])
      if (expected.position !== null) expect(positions).toContain(report.firstBadPosition)
    } finally {
      await bypassLedgerGuards(h.db, (trx) => sql.raw(undo).execute(trx))
    }
    const clean = await ledgerChainVerify(h.db, { publicKey })
    expect(clean.problems).toEqual([])
    expect(clean.ok).toBe(true)
  }

  it('names a deleted middle attempt, and a row put back verifies', async () => {
    const attempts = (
      await sql<{ position: string; tx_id: string }>`
        select position::text, tx_id::text from ledger where delivery_id = ${retried}::uuid and kind = 'delivery.attempted' order by position
      `.execute(h.db)
    ).rows
    expect(attempts.length).toBeGreaterThanOrEqual(2)
    const middle = attempts[1]!
    await forged(
      `create table forged_saved as select * from ledger where position = ${middle.position}; delete from ledger where position = ${middle.position}`,
      `insert into ledger overriding system value select * from forged_saved; drop table forged_saved`,
      { kind: 'row_missing', position: middle.position },
    )
  })

  it('names an edited fanout.decided payload', async () => {
    // One that matched an endpoint (hookledger's own news may have matched none).
    const [fanout] = (
      await sql<{ position: string }>`select position::text from ledger where kind = 'fanout.decided' and payload->'matched' <> '[]'::jsonb order by position limit 1`.execute(h.db)
    ).rows
    await forged(
      `create table fanout_saved as select position, payload from ledger where position = ${fanout!.position};
       update ledger set payload = jsonb_set(payload, '{matched}', '[]') where position = ${fanout!.position}`,
      `update ledger l set payload = s.payload from fanout_saved s where s.position = l.position; drop table fanout_saved`,
      { kind: 'row_changed', position: fanout!.position },
    )
  })

  it('names an edited occurred_at', async () => {
    const [claimed] = await rowsOf('delivery.claimed')
    await forged(
      `update ledger set occurred_at = occurred_at + interval '1 microsecond' where position = ${claimed!.position}`,
      `update ledger set occurred_at = occurred_at - interval '1 microsecond' where position = ${claimed!.position}`,
      { kind: 'row_changed', position: claimed!.position },
    )
  })

  it('names a forged row slipped into a sealed range', async () => {
    const [first] = await rowsOf('fanout.decided')
    await forged(
      `insert into ledger (position, tx_id, occurred_at, owner_id, kind, payload, actor) overriding system value
       values (100000, '${first!.tx_id}'::xid8, now(), 'default', 'event.pruned', '{"published_at":"2026-01-01T00:00:00.000Z"}', 'forger')`,
      `delete from ledger where position = 100000`,
      { kind: 'row_inserted', position: '100000' },
    )
  })

  it('names two swapped rows', async () => {
    const [a, b] = await rowsOf('delivery.attempted')
    const content = 'occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor'
    const swapTo = (from: string) =>
      `update ledger l set (${content}) = (select ${content} from swap s where s.position = ${from}) where l.position = `
    await forged(
      `create table swap as select position, ${content} from ledger where position in (${a!.position}, ${b!.position});
       ${swapTo(b!.position)}${a!.position}; ${swapTo(a!.position)}${b!.position}`,
      `${swapTo(a!.position)}${a!.position}; ${swapTo(b!.position)}${b!.position}; drop table swap`,
      // Within one checkpoint the verifier sees the contents traded places (order_changed);
      // across two, each row is simply not the one sealed there (row_changed).
      { kind: ['order_changed', 'row_changed'], position: [a!.position, b!.position] },
    )
  })

  it('names a checkpoint whose signature was forged', async () => {
    const forgedSignature = Buffer.from(nacl.sign.detached(new Uint8Array(32), nacl.sign.keyPair().secretKey)).toString('base64')
    await forged(
      `create table cp_saved as select seq, signature from ledger_checkpoints where seq = 1;
       update ledger_checkpoints set signature = '${forgedSignature}' where seq = 1`,
      `update ledger_checkpoints c set signature = s.signature from cp_saved s where s.seq = c.seq; drop table cp_saved`,
      { kind: 'checkpoint_signature_bad', position: null },
    )
  })

  it('an export verifies offline with the public key alone; a one-character change fails', async () => {
    const lines: string[] = []
    await ledgerExport(h.db, { onLine: (line: LedgerExportLine) => void lines.push(JSON.stringify(line)) })
    const check = (text: string[]) => {
      const v = new LedgerExportVerifier({ publicKey })
      for (const line of text) v.pushLine(line)
      return v.finish()
    }
    expect(check(lines)).toMatchObject({ ok: true, problems: [] })
    const at = lines.findIndex((l) => l.includes('"kind":"delivery.attempted"'))
    const changed = [...lines]
    changed[at] = changed[at]!.replace('"status_code":503', '"status_code":502')
    expect(changed[at]).not.toBe(lines[at])
    expect(check(changed).ok).toBe(false)
    // A range: the checkpoints holding positions 5–9, anchored on the one before.
    const part: string[] = []
    await ledgerExport(h.db, { from: '9', to: '12', onLine: (line) => void part.push(JSON.stringify(line)) })
    expect(part.some((l) => l.startsWith('{"type":"anchor"'))).toBe(true)
    expect(check(part)).toMatchObject({ ok: true, problems: [] })
    // Cut at a checkpoint boundary (its count was never signed): the signed end is missing.
    const lastCheckpoint = lines.map((l, i) => (l.startsWith('{"type":"checkpoint"') ? i : -1)).filter((i) => i >= 0).at(-1)!
    const cut = check(lines.slice(0, lastCheckpoint))
    expect(cut.ok).toBe(false)
    expect(cut.malformed.join('\n')).toMatch(/no signed end: it was cut short/)
    // Cut and given the end of a shorter tree: the sizes disagree.
    const withOldEnd = [...lines.slice(0, lastCheckpoint), lines.at(-1)!]
    expect(check(withOldEnd).malformed.join('\n')).toMatch(/ends at a tree of \d+ rows, but its last checkpoint reaches/)
    // An end whose note was edited does not verify.
    const forgedEnd = [...lines.slice(0, -1), lines.at(-1)!.replace(/\\n(\d+)\\n/, (_m, n: string) => `\\n${Number(n)}\\n`).replace(/— (\S+) (.)/, (_m, key: string, c: string) => `— ${key} ${c === 'A' ? 'B' : 'A'}`)]
    expect(check(forgedEnd).ok).toBe(false)
  })

  it('many small checkpoints: positions and sequence numbers past a digit boundary stay in numeric order', async () => {
    // More history, sealed two rows at a time: seq passes 9 → 10 and positions 99 → 100.
    for (let i = 0; i < 30; i++) await h.publish({ id: `evt_more_${i}` })
    h.clock.advance(3_600_000)
    h.receiver.enqueue(...Array.from({ length: 30 }, () => ({ status: 204 })))
    for (let i = 0; i < 40; i++) await h.step()
    const sealed = await sealEverything(h.db, key, () => h.clock.now(), { maxRows: 2 })
    expect(sealed.checkpoints).toBeGreaterThan(12)
    const positions = (await sql<{ max: string }>`select max(position)::text as max from ledger`.execute(h.db)).rows[0]!.max
    expect(Number(positions)).toBeGreaterThan(100)
    const report = await ledgerChainVerify(h.db, { publicKey })
    expect(report.problems).toEqual([])
    expect(report.unsealedRows).toBe(0)
    const last = (await sql<{ seq: string }>`select max(seq)::text as seq from ledger_checkpoints`.execute(h.db)).rows[0]!.seq
    const more = await ledgerSeal(h.db, { key, now: h.clock.now(), force: true })
    expect(more.checkpoints[0]!.seq).toBe(Number(last) + 1)
  })

  it('a receipt proves a delivery\'s entries offline; changing its 503 to 200 fails', async () => {
    const receipt = (await ledgerReceipt(h.db, { owner_id: 'default', delivery_id: retried }))!
    expect(receipt.entries.length).toBeGreaterThan(3)
    expect(verifyLedgerReceipt(receipt, { publicKey })).toMatchObject({ ok: true, problems: [] })
    const text = JSON.stringify(receipt)
    expect(text).toContain('"status_code":503')
    const tampered = JSON.parse(text.replace('"status_code":503', '"status_code":200')) as LedgerReceipt
    expect(verifyLedgerReceipt(tampered, { publicKey }).ok).toBe(false)
    expect(await ledgerReceipt(h.db, { owner_id: 'someone-else', delivery_id: retried })).toBeNull()
  })

  it('a row forged inside the sealed range is filed as unprovable, never as merely unsealed, and fails the receipt', async () => {
    const [first] = await rowsOf('fanout.decided')
    const forge = `insert into ledger (position, tx_id, occurred_at, owner_id, kind, delivery_id, payload, actor) overriding system value
      values (987654321, '${first!.tx_id}'::xid8, now(), 'default', 'delivery.completed', '${retried}', '{}', 'worker:forger')`
    await bypassLedgerGuards(h.db, (trx) => sql.raw(forge).execute(trx))
    try {
      const receipt = (await ledgerReceipt(h.db, { owner_id: 'default', delivery_id: retried }))!
      expect(receipt.unprovable.map((r) => r.position)).toEqual(['987654321'])
      expect(receipt.unsealed.map((r) => r.position)).not.toContain('987654321')
      const result = verifyLedgerReceipt(receipt, { publicKey })
      expect(result.ok).toBe(false)
      expect(result.problems.join('\n')).toMatch(/row 987654321 sits inside the sealed range but no checkpoint sealed it/)
    } finally {
      await bypassLedgerGuards(h.db, (trx) => sql.raw('delete from ledger where position = 987654321').execute(trx))
    }
  })
})
