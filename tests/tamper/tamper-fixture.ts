/**
 * A small install with history of every kind (an endpoint, deliveries, a token, an access code
 * and an embed, checkpoints, a snapshot), run as the service's own database role, for the
 * tamper suite to attack.
 */
import { sql } from 'kysely'
import pg from 'pg'
import {
  generateLedgerSigningKey,
  parseLedgerPublicKey,
  parseLedgerSigningKey,
  ledgerSnapshotTake,
} from '@hookledger/ledger'
import { accessCodePut, apiTokenCreate, createDb, embedPut, type Db } from '@hookledger/store'
import { adminDbOf, engineHarness, sealEverything, testDatabase, type EngineHarness } from '@hookledger/testkit'

export const signingKey = parseLedgerSigningKey(generateLedgerSigningKey().secret)
export const publicKey = parseLedgerPublicKey(signingKey.publicKey)

export interface TamperInstall {
  readonly h: EngineHarness
  /** The engine's own handle: the service role. */
  readonly service: Db
  /** The same database as the publisher role. */
  readonly publisher: Db
  /** A superuser's handle (for forging behind the functions, and for reading what is left). */
  readonly admin: Db
  readonly endpointId: string
  readonly deliveryId: string
  readonly tokenId: string
  close(): Promise<void>
}

export async function tamperInstall(): Promise<TamperInstall> {
  const database = await testDatabase({ role: 'service' })
  const h = await engineHarness({ database })
  const { endpoint } = await h.createEndpoint()
  await h.publish({ id: 'evt_tamper_a' })
  await h.publish({ id: 'evt_tamper_b' })
  await h.step()
  const deliveryId = (await h.deliveryOf('evt_tamper_a')).id
  const now = h.clock.now()
  const token = await apiTokenCreate(h.db, { owner_id: 'default', scopes: ['publish'], label: 'ci', now })
  await accessCodePut(h.db, { owner_id: 'default', now }, { id: 'code_a', role_globs: ['*'], deny_globs: [], reads_published_slice: false, expires_at: null })
  const embed = await embedPut(h.db, { owner_id: 'default', now }, { id: 'embed_a', access_code_id: 'code_a' })
  if (typeof embed === 'string') throw new Error(`embed put: ${embed}`)
  await ledgerSnapshotTake(h.db, { key: signingKey, now: () => h.clock.now(), signWithinMs: 5_000 })
  await h.publish({ id: 'evt_tamper_c' })
  await h.step()
  await sealEverything(h.db, signingKey, () => h.clock.now())
  const publisherPool = new pg.Pool({ connectionString: database.roleUrl('publisher'), max: 2 })
  publisherPool.on('error', () => {})
  const publisher = createDb(publisherPool)
  return {
    h,
    service: h.db,
    publisher,
    admin: adminDbOf(h.db),
    endpointId: endpoint.id,
    deliveryId,
    tokenId: token.id,
    close: async () => {
      await publisher.destroy()
      await h.close()
    },
  }
}

/** A fingerprint of everything the attacks must leave as it was. */
export async function historyFingerprint(admin: Db): Promise<string> {
  const { rows } = await sql<{ f: string }>`
    select md5(string_agg(x, '|' order by x)) as f from (
      select 'l' || md5(l::text) as x from ledger l
      union all select 'c' || md5(c::text) from ledger_checkpoints c
      union all select 's' || md5(s::text) from ledger_snapshots s
      union all select 'r' || md5(r::text) from ledger_snapshot_rows r
      union all select 'e' || md5(e::text) from endpoints e
      union all select 'd' || md5(d::text) from deliveries d
      union all select 'v' || md5(v::text) from events v
      union all select 't' || md5(t::text) from api_tokens t
      union all select 'a' || md5(a::text) from access_codes a
      union all select 'm' || md5(m::text) from embeds m
      union all select 'p' || relname from pg_class where relname like 'ledger_p_%' and relkind = 'r'
    ) all_rows
  `.execute(admin)
  return rows[0]!.f
}
