import { sql, type RawBuilder } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerVerify } from '@hookledger/ledger'
import { historyFingerprint, publicKey, tamperInstall, type TamperInstall } from './tamper-fixture.js'

/**
 * Everything an attacker holding the service's database credential (`hookledger_service`, not a
 * superuser) might try against history, each refused by the database itself with a clear
 * error — and afterwards history is exactly as it was and `ledger verify` is clean.
 */
describe('as hookledger_service, no statement changes history', () => {
  let t: TamperInstall
  let before = ''
  beforeAll(async () => {
    t = await tamperInstall()
    before = await historyFingerprint(t.admin)
    expect((await sql<{ me: string }>`select current_user as me`.execute(t.service)).rows[0]!.me).toMatch(/_service$/)
  })
  afterAll(() => t?.close())

  const partition = async () =>
    (await sql<{ name: string }>`select name from ledger_partitions where not is_default order by from_position limit 1`.execute(t.admin)).rows[0]!.name
  const write = (owner: string, w: object) => sql`select hookledger_write(${owner}, ${JSON.stringify(w)}::jsonb)`
  const entry = (kind: string, fields: object) => ({ occurred_at: new Date().toISOString(), owner_id: 'default', actor: 'forger', endpoint_id: null, delivery_id: null, event_id: null, ...fields, kind })

  // [attack, statement (or a function building it), what the refusal says]
  const attacks: [string, () => Promise<RawBuilder<unknown>> | RawBuilder<unknown>, RegExp][] = [
    ['edit a ledger row', () => sql`update ledger set payload = '{"status_code":200}' where kind = 'delivery.attempted'`, /permission denied for table ledger/],
    ['delete a ledger row', () => sql`delete from ledger where kind = 'delivery.attempted'`, /permission denied for table ledger/],
    ['reorder ledger rows', () => sql`update ledger l set payload = o.payload, kind = o.kind from ledger o where o.position = l.position + 1`, /permission denied for table ledger/],
    ['truncate the ledger', () => sql`truncate ledger`, /permission denied for table ledger/],
    ['insert a ledger row', () => sql`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (now(), 'default', 'token.issued', '{}', 'forger')`, /permission denied for table ledger/],
    ['forge tx_id and position', () => sql`insert into ledger overriding system value select position, '18446744073709551615'::xid8, occurred_at, owner_id, kind, endpoint_id, delivery_id, event_id, payload, actor from ledger limit 1`, /permission denied for table ledger/],
    ['forge a retention row', () => sql`insert into ledger (occurred_at, owner_id, kind, payload, actor) values (now(), '*', 'ledger.retention', '{"before_position": 100, "rows": 100}', 'forger')`, /permission denied for table ledger/],
    ['forge a retention row through the write function', () => write('*', { entries: [entry('ledger.retention', { owner_id: '*', payload: { before_position: 100, rows: 100 } })] }), /appended only by its own function/],
    ['delete a checkpoint', () => sql`delete from ledger_checkpoints where seq = (select max(seq) from ledger_checkpoints)`, /permission denied for table ledger_checkpoints/],
    ['edit a checkpoint', () => sql`update ledger_checkpoints set signature = 'x'`, /permission denied for table ledger_checkpoints/],
    ['insert a checkpoint', () => sql`insert into ledger_checkpoints select * from ledger_checkpoints limit 1`, /permission denied for table ledger_checkpoints/],
    ['append a checkpoint that skips rows', () => sql`select hookledger_checkpoint_append((select to_jsonb(c) - 'seq' || jsonb_build_object('seq', c.seq + 1) from ledger_checkpoints c order by seq desc limit 1), ''::bytea, ''::bytea)`, /checkpoint_(rows|total|seq)/],
    ['disable the append-only trigger', () => sql`alter table ledger disable trigger all`, /must be owner of table ledger/],
    ['disable a projection trigger', () => sql`alter table delivery_states disable trigger delivery_states_one_door`, /must be owner of table delivery_states/],
    ['switch replication role (triggers off)', () => sql`set session_replication_role = replica`, /permission denied to set parameter "session_replication_role"/],
    ['switch on the old retention setting, then delete', () => sql.raw(`select set_config('hookledger.ledger_retention', 'on', true); delete from ledger`), /permission denied for table ledger/],
    ['drop a ledger partition', async () => sql`drop table ${sql.id(await partition())}`, /must be owner of table/],
    ['detach a ledger partition', async () => sql`alter table ledger detach partition ${sql.id(await partition())}`, /must be owner of table ledger/],
    ['call the retention function with a forged archive', () => sql`select hookledger_ledger_retention(999999, 100000000, '{"sha256":"forged"}'::jsonb, 'forger', now())`, /checkpoint 999999 does not exist/],
    ['edit a projection row', () => sql`update deliveries set attempts = 0, state = 'completed'`, /permission denied for view deliveries/],
    ["edit a delivery's state row", () => sql`update delivery_states set attempts = 0, state = 'completed'`, /permission denied for table delivery_states/],
    ["edit what a delivery is", () => sql`update delivery_origins set owner_id = 'victim'`, /permission denied for table delivery_origins/],
    ["edit a projection row's lockable column", () => sql`update delivery_states set id = id`, /refused: projections change only through hookledger_write/],
    ["edit a lockable column through the view", () => sql`update deliveries set id = id`, /permission denied for table delivery_(origins|states)|refused: projections change only through hookledger_write/],
    ['point an endpoint elsewhere', () => sql`update endpoints set url = 'https://attacker.example/hook'`, /permission denied for table endpoints/],
    ['make an event type internal behind the ledger', () => sql`update event_types set exposure = 'internal'`, /permission denied for table event_types/],
    ["edit an event type's lockable name", () => sql`update event_types set name = name`, /refused: projections change only through hookledger_write/],
    ['declare an event type without its entry', () => sql`insert into event_types values ('x.y', '', 'webhook', 'g', null, null, null, null, now(), now())`, /permission denied for table event_types/],
    ['insert a projection row', () => sql`insert into deliveries select * from deliveries limit 1`, /permission denied for view deliveries/],
    ['insert a state row', () => sql`insert into delivery_states select * from delivery_states limit 1`, /permission denied for table delivery_states/],
    ['delete a projection row', () => sql`delete from endpoints`, /permission denied for table endpoints/],
    ['truncate a projection', () => sql`truncate delivery_states, delivery_origins, endpoints`, /permission denied for table (delivery_states|delivery_origins|endpoints)/],
    ['edit the claim queue', () => sql`update endpoint_queue set ready_at = null`, /permission denied for table endpoint_queue/],
    ["set an owner's publish bucket outside its rule", () => sql`update owners set publish_tat = null`, /permission denied for table owners/],
    ["call the limit's rule directly (no statement of its own)", () => sql`select hookledger_owner_admit('default', 1, null)`, /permission denied for function hookledger_owner_admit/],
    ["edit an event's data", () => sql`update events set data = '{"forged": true}'`, /permission denied for table events/],
    ["edit an event's id (the lockable column)", () => sql`update events set id = id || '_x'`, /refused: projections change only through hookledger_write/],
    ["widen a token's scopes", () => sql`update api_tokens set scopes = '{admin,operator}'`, /permission denied for table api_tokens/],
    ['insert a token', () => sql`insert into api_tokens select gen_random_uuid(), owner_id, '{operator}', sha256('x'), '', now(), null from api_tokens limit 1`, /permission denied for table api_tokens/],
    ['edit an access code', () => sql`update access_codes set role_globs = '{*}', deny_globs = '{}'`, /permission denied for table access_codes/],
    ['edit a snapshot row', () => sql`update ledger_snapshot_rows set rows = '[]'`, /permission denied for table ledger_snapshot_rows/],
    ['delete snapshot rows', () => sql`delete from ledger_snapshot_rows`, /permission denied for table ledger_snapshot_rows/],
    ['add rows to a recorded snapshot', () => sql`select hookledger_snapshot_rows_append((select max(seq) from ledger_snapshots), '[{"entity":"endpoint","chunk":99,"rows":[]}]')`, /snapshot_closed/],
    ['prune the latest signed snapshot', () => sql`select hookledger_ledger_snapshots_prune(1000000)`, /snapshot_prune/],
    ['an endpoint.created entry with an empty payload', () => write('default', { entries: [entry('endpoint.created', { endpoint_id: '00000000-0000-4000-8000-00000000e001', payload: {} })] }), /entry_invalid: endpoint\.created: payload\.\w+ must be a string/],
    ['a claim that names no lease (ledger format 5: lease_ms, or a format-4 worker\'s lease_until)', () => write('default', { entries: [entry('delivery.claimed', { endpoint_id: '00000000-0000-4000-8000-00000000e001', delivery_id: '00000000-0000-4000-8000-00000000d001', event_id: 'evt_forged', payload: { lease_until: 15000 } })] }), /entry_invalid: delivery\.claimed: payload\.lease_ms must be a number/],
    ['a projection row without its entry', () => sql`select hookledger_write('default', jsonb_build_object('deliveries', (select jsonb_build_object('changed', jsonb_agg(to_jsonb(d) || '{"attempts": 0}' order by d.id), 'versions', jsonb_agg(d.updated_at order by d.id)) from deliveries d)))`, /row_without_entry/],
    [
      'an endpoint row that is not what its entry says',
      () => sql`select hookledger_write('default', jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'endpoint.created', 'actor', 'forger',
          'endpoint_id', '00000000-0000-4000-8000-00000000e002',
          'payload', jsonb_build_object('url', 'https://ok.example', 'description', '', 'event_types', '["*"]'::jsonb, 'secret_sealed', 'AA==', 'secret_key_id', 'k', 'embed_id', null))),
        'endpoints', jsonb_build_object('created', (select jsonb_agg(to_jsonb(e) || '{"id": "00000000-0000-4000-8000-00000000e002", "url": "https://attacker.example"}') from (select * from endpoints limit 1) e))))`,
      /row_disagrees/,
    ],
    [
      'a changed row written over a newer version',
      () => sql`select hookledger_write('default', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'delivery.completed', 'actor', 'forger',
          'endpoint_id', d.endpoint_id, 'delivery_id', d.id, 'event_id', d.event_id, 'payload', '{}'::jsonb)),
        'deliveries', jsonb_build_object('changed', jsonb_build_array(to_jsonb(d) || '{"state": "completed"}'), 'versions', jsonb_build_array('2000-01-01T00:00:00Z')))
        from deliveries d order by d.id limit 1))`,
      /row_version/,
    ],
    [
      'a delivery made into another one (what it is never changes)',
      () => sql`select hookledger_write('default', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'delivery.completed', 'actor', 'forger',
          'endpoint_id', d.endpoint_id, 'delivery_id', d.id, 'event_id', d.event_id, 'payload', '{}'::jsonb)),
        'deliveries', jsonb_build_object('changed', jsonb_build_array(jsonb_build_object('id', d.id, 'event_type', 'forged.type')), 'versions', jsonb_build_array(d.updated_at)))
        from deliveries d order by d.id limit 1))`,
      /row_disagrees: delivery .* changed what it is/,
    ],
    [
      'a change to a delivery that does not exist',
      () => write('default', {
        entries: [entry('delivery.completed', { endpoint_id: '00000000-0000-4000-8000-00000000e004', delivery_id: '00000000-0000-4000-8000-00000000d004', event_id: 'evt_none', payload: {} })],
        deliveries: { changed: [{ id: '00000000-0000-4000-8000-00000000d004', state: 'completed' }], versions: ['2000-01-01T00:00:00Z'] },
      }),
      /row_version: a changed row changed since it was read \(or is gone/,
    ],
    [
      "a delivery to another owner's endpoint (a settle reads a delivery's owner off its endpoint)",
      () => sql`select hookledger_write('*', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'victim', 'kind', 'delivery.enqueued', 'actor', 'forger',
          'endpoint_id', d.endpoint_id, 'delivery_id', '00000000-0000-4000-8000-00000000d0e5', 'event_id', d.event_id,
          'payload', jsonb_build_object('event_type', d.event_type, 'next_attempt_at', now(), 'cool_down', false))),
        'deliveries', jsonb_build_object('created', jsonb_build_array(to_jsonb(d) || '{"id": "00000000-0000-4000-8000-00000000d0e5", "owner_id": "victim"}')))
        from deliveries d order by d.id limit 1))`,
      /row_owner: delivery 00000000-0000-4000-8000-00000000d0e5 is not of its endpoint's owner/,
    ],
    [
      'a delivery created under a fan-out decision that did not match its endpoint (ledger format 3)',
      () => sql`select hookledger_write('default', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'fanout.decided', 'actor', 'forger',
          'event_id', 'evt_forged_1', 'payload', jsonb_build_object('type', d.event_type, 'matched', '[]'::jsonb, 'denied', '[]'::jsonb, 'enqueues', true))),
        'deliveries', jsonb_build_object('created', jsonb_build_array(to_jsonb(d) || jsonb_build_object('id', hookledger_delivery_id(d.endpoint_id, 'evt_forged_1'), 'event_id', 'evt_forged_1'))))
        from deliveries d where d.owner_id = 'default' order by d.id limit 1))`,
      /row_without_entry: delivery .* written without an entry about it/,
    ],
    [
      'a delivery of another type than the fan-out decision that enqueued it (ledger format 3)',
      () => sql`select hookledger_write('default', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'fanout.decided', 'actor', 'forger',
          'event_id', 'evt_forged_2', 'payload', jsonb_build_object('type', d.event_type, 'matched', jsonb_build_array(d.endpoint_id), 'denied', '[]'::jsonb, 'enqueues', true))),
        'deliveries', jsonb_build_object('created', jsonb_build_array(to_jsonb(d) || jsonb_build_object('id', hookledger_delivery_id(d.endpoint_id, 'evt_forged_2'), 'event_id', 'evt_forged_2', 'event_type', 'forged.type'))))
        from deliveries d where d.owner_id = 'default' order by d.id limit 1))`,
      /row_disagrees: delivery .* is not what the entry enqueuing it says/,
    ],
    [
      'a delivery.enqueued stored as if a fan-out decision implied it (by_fanout)',
      () => sql`select hookledger_write('default', (select jsonb_build_object(
        'entries', jsonb_build_array(jsonb_build_object('occurred_at', now(), 'owner_id', 'default', 'kind', 'delivery.enqueued', 'actor', 'forger',
          'endpoint_id', d.endpoint_id, 'delivery_id', hookledger_delivery_id(d.endpoint_id, 'evt_forged_3'), 'event_id', 'evt_forged_3',
          'payload', jsonb_build_object('event_type', d.event_type, 'next_attempt_at', now(), 'cool_down', false, 'by_fanout', true))),
        'deliveries', jsonb_build_object('created', jsonb_build_array(to_jsonb(d) || jsonb_build_object('id', hookledger_delivery_id(d.endpoint_id, 'evt_forged_3'), 'event_id', 'evt_forged_3'))))
        from deliveries d where d.owner_id = 'default' order by d.id limit 1))`,
      /entry_invalid/,
    ],
    ["another owner's entry in an owner's write", () => write('default', { entries: [entry('endpoint.disabled', { owner_id: 'victim', endpoint_id: '00000000-0000-4000-8000-00000000e003', payload: { reason: 'x' } })] }), /entry of owner victim in a write for default/],
    ['an unknown entry kind', () => write('default', { entries: [entry('teleport.done', { payload: {} })] }), /unknown entry kind/],
    ['create a function in the schema', () => sql`create function hookledger.evil() returns int language sql as 'select 1'`, /permission denied for schema/],
    ['create a table in the schema', () => sql`create table hookledger.ledger_shadow (x int)`, /permission denied for schema/],
  ]

  for (const [attack, statement, refusal] of attacks) {
    it(`refuses: ${attack}`, async () => {
      const built = await statement()
      await expect(t.service.transaction().execute((trx) => built.execute(trx))).rejects.toThrow(refusal)
    })
  }

  it('a temporary table named like ours does not stand in for it inside the functions', async () => {
    await t.service.connection().execute(async (conn) => {
      await sql`create temp table ledger (like hookledger.ledger)`.execute(conn)
      await sql`create temp table deliveries (like hookledger.deliveries)`.execute(conn)
      // Refused against the real tables, as it would be with no shadow at all.
      await expect(sql`select hookledger_write('default', jsonb_build_object('deliveries', jsonb_build_object('changed', (select jsonb_agg(to_jsonb(d)) from hookledger.deliveries d))))`.execute(conn)).rejects.toThrow(/row_without_entry|row_version/)
      await sql`drop table pg_temp.ledger, pg_temp.deliveries`.execute(conn)
    })
  })

  it('what the service does read and lock still works: it can select and lock, not change', async () => {
    await t.service.transaction().execute(async (trx) => {
      expect((await sql`select * from deliveries for update`.execute(trx)).rows.length).toBeGreaterThan(0)
      expect((await sql`select count(*) from ledger`.execute(trx)).rows.length).toBe(1)
    })
  })

  it('leaves history exactly as it was, and ledger verify clean', async () => {
    expect(await historyFingerprint(t.admin)).toBe(before)
    const verdict = await ledgerVerify(t.service, { publicKey, full: true })
    expect(verdict.chain.problems).toEqual([])
    expect(verdict.replay?.differences).toEqual([])
    expect(verdict.ok).toBe(true)
  })
})
