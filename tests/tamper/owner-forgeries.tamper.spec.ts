import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { ledgerVerify } from '@hookledger/ledger'
import { bypassLedgerGuards } from '@hookledger/testkit'
import { publicKey, tamperInstall, type TamperInstall } from './tamper-fixture.js'

/**
 * What the database cannot refuse — the owner role or a superuser, triggers off — `ledger
 * verify` names: where and what. (Row-level forgeries of the ledger itself, each at its
 * position, are in packages/worker/src/ledger-chain.int.spec.ts; projection edits of every
 * column in ledger-replay-tamper.int.spec.ts.) One install per forgery.
 */
describe('as the owner or a superuser, every forgery is named by ledger verify', () => {
  let t: TamperInstall | null = null
  afterEach(async () => {
    await t?.close()
    t = null
  })

  /** `full` (default): every row and a replay from the first entry; else from the latest snapshot, as `ledger verify` runs by default. */
  async function forgedThenVerified(forge: (t: TamperInstall) => Promise<void>, full = true) {
    t = await tamperInstall()
    const clean = await ledgerVerify(t.service, { publicKey, full })
    expect(clean.ok, JSON.stringify(clean.replay?.differences)).toBe(true)
    await forge(t)
    return ledgerVerify(t.service, { publicKey, full })
  }

  it('even a superuser, triggers on, is refused: the ledger append-only, the projections one door', async () => {
    t = await tamperInstall()
    await expect(sql`update ledger set actor = 'forger'`.execute(t.admin)).rejects.toThrow(/the ledger is append-only: UPDATE/)
    await expect(sql`delete from ledger_checkpoints`.execute(t.admin)).rejects.toThrow(/the ledger is append-only: DELETE/)
    await expect(sql`truncate ledger`.execute(t.admin)).rejects.toThrow(/the ledger is append-only: TRUNCATE/)
    await expect(sql`update deliveries set attempts = 0`.execute(t.admin)).rejects.toThrow(/refused: projections change only through hookledger_write/)
    await expect(sql`update events set data = '{}'`.execute(t.admin)).rejects.toThrow(/refused: projections change only through hookledger_write/)
  })

  it("an event's data edited: the events table differs from its event.published entry", async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) => sql`update events set data = '{"forged": true}' where id = 'evt_tamper_a'`.execute(trx)).then(() => {}),
    )
    expect(verdict.ok).toBe(false)
    expect(verdict.replay?.differences).toContainEqual(expect.objectContaining({ table: 'events', key: 'default/evt_tamper_a', kind: 'changed', columns: ['data_sha256'] }))
  })

  it("a token's scopes widened: api_tokens differs from its token.issued entry", async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) => sql`update api_tokens set scopes = '{operator}' where id = ${t.tokenId}::uuid`.execute(trx)).then(() => {}),
    )
    expect(verdict.ok).toBe(false)
    const named = verdict.replay?.differences.find((d) => d.table === 'api_tokens')
    expect(named).toMatchObject({ key: t!.tokenId, kind: 'changed', columns: ['scopes'] })
    expect(named?.position).toMatch(/^\d+$/)
  })

  it('a token inserted with no entry: an extra row', async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) =>
        sql`insert into api_tokens values ('00000000-0000-4000-8000-0000000000f1', 'default', '{operator}', sha256('forged'), '', now(), null)`.execute(trx),
      ).then(() => {}),
    )
    expect(verdict.replay?.differences).toContainEqual(expect.objectContaining({ table: 'api_tokens', key: '00000000-0000-4000-8000-0000000000f1', kind: 'extra_live' }))
  })

  it("an access code's globs widened, an embed pointed at another code", async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, async (trx) => {
        await sql`update access_codes set deny_globs = '{}', role_globs = '{**}' where id = 'code_a'`.execute(trx)
        await sql`update embeds set deleted_at = now() where id = 'embed_a'`.execute(trx)
      }),
    )
    expect(verdict.replay?.differences).toContainEqual(expect.objectContaining({ table: 'access_codes', key: 'default/code_a', kind: 'changed', columns: ['role_globs'] }))
    expect(verdict.replay?.differences).toContainEqual(expect.objectContaining({ table: 'embeds', key: 'default/embed_a', kind: 'changed', columns: ['deleted_at'] }))
  })

  it("an endpoint's URL pointed at an attacker: named by replay", async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) => sql`update endpoints set url = 'https://attacker.example/' where id = ${t.endpointId}::uuid`.execute(trx)).then(() => {}),
    )
    expect(verdict.replay?.differences).toContainEqual(expect.objectContaining({ table: 'endpoints', key: t!.endpointId, kind: 'changed', columns: ['url'] }))
  })

  it('a sealed attempt rewritten as a success: named at its position', async () => {
    let position = ''
    const verdict = await forgedThenVerified(async (t) => {
      position = (await sql<{ p: string }>`select position::text as p from ledger where kind = 'delivery.attempted' order by position limit 1`.execute(t.admin)).rows[0]!.p
      await bypassLedgerGuards(t.service, (trx) => sql`update ledger set payload = payload || '{"status_code": 200}' where position = ${position}::bigint`.execute(trx))
    })
    expect(verdict.chain.ok).toBe(false)
    expect(verdict.chain.problems.map((p) => p.position)).toContain(position)
  })

  it('an attempt inserted with a tx_id no transaction has had (never to be sealed): named', async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) =>
        sql`insert into ledger (tx_id, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor)
            select '18446744073709551615'::xid8, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload || '{"status_code": 200}', actor
            from ledger where kind = 'delivery.attempted' order by position limit 1`.execute(trx),
      ).then(() => {}),
    )
    expect(verdict.ok).toBe(false)
    expect(verdict.chain.problems).toContainEqual(expect.objectContaining({ kind: 'tx_id_forged' }))
  })

  it('a ledger partition dropped: every sealed row it held is missing', async () => {
    const verdict = await forgedThenVerified(async (t) => {
      const name = (await sql<{ name: string }>`select name from ledger_partitions where not is_default order by from_position limit 1`.execute(t.admin)).rows[0]!.name
      await sql`alter table ledger detach partition ${sql.id(name)}`.execute(t.admin)
      await sql`drop table ${sql.id(name)}`.execute(t.admin)
    })
    expect(verdict.ok).toBe(false)
    expect(verdict.chain.problems.some((p) => p.kind === 'row_missing')).toBe(true)
  })

  it('a snapshot row edited: the snapshot no longer hashes to its signed digest', async () => {
    const verdict = await forgedThenVerified((t) =>
      bypassLedgerGuards(t.service, (trx) => sql`update ledger_snapshot_rows set rows = rows - 0 where chunk = 0 and entity = 'delivery'`.execute(trx)).then(() => {}),
      false,
    )
    expect(verdict.ok).toBe(false)
    expect(verdict.replay?.snapshot?.digestMatches).toBe(false)
  })
})
