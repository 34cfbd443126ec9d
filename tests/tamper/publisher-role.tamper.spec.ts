import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { historyFingerprint, tamperInstall, type TamperInstall } from './tamper-fixture.js'

/**
 * The credential applications publish with (`hookledger_publisher`): it publishes and reads the
 * event catalog it checks events against (`event_types`), and does nothing else — it cannot
 * read another table, nor change the catalog.
 */
describe('as hookledger_publisher, publishing is all there is', () => {
  let t: TamperInstall
  beforeAll(async () => {
    t = await tamperInstall()
  })
  afterAll(() => t?.close())

  it('publishes: the event and its ledger entry, with the SHA-256 of its data', async () => {
    const events = [{ id: 'evt_from_the_app', type: 'booking.created', subject: 'booking/1', data: { seats: 2 } }]
    const { rows } = await sql<{ outcomes: unknown }>`select hookledger_publish('default', ${JSON.stringify(events)}::jsonb, null, 'app') as outcomes`.execute(t.publisher)
    expect(rows[0]!.outcomes).toEqual([[1, true, null]])
    const entry = (await sql<{ payload: Record<string, unknown> }>`select payload from ledger where event_id = 'evt_from_the_app'`.execute(t.admin)).rows[0]!
    expect(entry.payload).toEqual({ type: 'booking.created', subject: 'booking/1', data_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })
  })

  it('reads the event catalog (what the service accepts), and nothing changes it', async () => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from hookledger.event_types`.execute(t.publisher)
    expect(rows[0]!.n).toBeGreaterThanOrEqual(0)
  })

  const refused: [string, string, RegExp][] = [
    ['change the event catalog', "update hookledger.event_types set exposure = 'internal'", /permission denied for table event_types/],
    ['declare an event type directly', "insert into hookledger.event_types (name, description, exposure, group_name, declared_at, updated_at) values ('x.y', '', 'webhook', 'g', now(), now())", /permission denied for table event_types/],
    ['read events', 'select * from hookledger.events', /permission denied for table events/],
    ['read the ledger', 'select * from hookledger.ledger', /permission denied for table ledger/],
    ['read endpoints (and their sealed secrets)', 'select * from hookledger.endpoints', /permission denied for table endpoints/],
    ['read tokens', 'select * from hookledger.api_tokens', /permission denied for table api_tokens/],
    ['insert an event directly', "insert into hookledger.events (owner_id, id, type, subject, occurred_at, published_at) values ('default', 'x', 't', 's', now(), now())", /permission denied for table events/],
    ['insert a ledger row', "insert into hookledger.ledger (occurred_at, owner_id, kind, actor) values (now(), 'default', 'token.issued', 'app')", /permission denied for table ledger/],
    ['call the write function', "select hookledger.hookledger_write('default', '{}')", /permission denied for function hookledger_write/],
    ['call the seal function', "select hookledger.hookledger_checkpoint_append('{}', null, null)", /permission denied for function hookledger_checkpoint_append/],
    ['call the retention function', "select hookledger.hookledger_ledger_retention(1, 1, null, 'app', now())", /permission denied for function hookledger_ledger_retention/],
    ['create partitions', 'select hookledger.hookledger_ledger_partitions_ahead(10, 1)', /permission denied for function hookledger_ledger_partitions_ahead/],
    ['disable a trigger', 'alter table hookledger.ledger disable trigger all', /must be owner of table ledger/],
    ['read the owners and their limits', 'select * from hookledger.owners', /permission denied for table owners/],
    ['publish around the owner\'s limit and suspension', `select hookledger.hookledger_publish_internal('default', '[{"id":"x","type":"t","subject":"s"}]', null, 'app')`, /permission denied for function hookledger_publish_internal/],
    ['publish around the owner\'s limit as the service does', `select hookledger.hookledger_publish_admitted('default', '[{"id":"x","type":"t","subject":"s"}]', null, 'app')`, /permission denied for function hookledger_publish_admitted/],
    ['charge another owner\'s publish limit', `select hookledger.hookledger_publish_admit('other', 1, null)`, /permission denied for function hookledger_publish_admit/],
    ['call the limit\'s rule directly', `select hookledger.hookledger_owner_admit('other', 1, null)`, /permission denied for function hookledger_owner_admit/],
    ['publish a reserved kind through the data', `select hookledger.hookledger_publish('*', '[{"id":"x","type":"t","subject":"s"}]', null, 'app')`, /owner_required/],
  ]
  for (const [what, statement, refusal] of refused) {
    it(`cannot ${what}`, async () => {
      await expect(sql.raw(statement).execute(t.publisher)).rejects.toThrow(refusal)
    })
  }

  it('leaves the rest of history as it was', async () => {
    const before = await historyFingerprint(t.admin)
    for (const [, statement] of refused) await sql.raw(statement).execute(t.publisher).catch(() => {})
    expect(await historyFingerprint(t.admin)).toBe(before)
  })
})
