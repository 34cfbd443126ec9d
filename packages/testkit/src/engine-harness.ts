import {
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateMasterKey,
  generateV1aKeyPair,
  generateWebhookSecret,
  secretKeyId,
  signsV1a,
  type EgressProxy,
  type EndpointRow,
  type Logger,
  type SignatureScheme,
  type SnoozeBudget,
} from '@hookledger/core'
import { createPgNotifier, deliveryLedgerEntries, endpointCreate, eventInsert, type EmbedAdmits, type EventToPublish } from '@hookledger/store'
import { ledgerReplayVerify } from '@hookledger/ledger'
import { Dispatcher, createHttpTransport } from '@hookledger/worker'
import { FakeClock } from './fake-clock.js'
import { testDatabase, type TestDatabase } from './test-database.js'
import { TestReceiver, type ReplyScript } from './test-receiver.js'

export interface HarnessOptions {
  readonly reply?: ReplyScript
  readonly concurrency?: number
  /** The dispatcher's turnShare (deliveries a turn keeps its slot while others wait). */
  readonly turnShare?: number
  readonly start?: string
  readonly embedAdmits?: EmbedAdmits
  readonly transportTimeoutMs?: number
  readonly snoozeBudget?: SnoozeBudget
  /** The dispatcher's delivery retention (default 30 days, as in `serve`). */
  readonly deliveryRetentionDays?: number
  /** A database of the test's own making (another schema, an upgraded one); closed with the harness. */
  readonly database?: TestDatabase
  /** The master key sealing endpoint secrets: the same one opens another harness's endpoints. */
  readonly masterKey?: Uint8Array
  /** The dispatcher's logger (silent by default); a test can capture every line. */
  readonly logger?: Logger
  /** The operator's egress proxy (`HOOKLEDGER_EGRESS_PROXY`): every delivery tunnels through it. */
  readonly proxy?: EgressProxy
  /** The dispatcher LISTENs as `serve` does (a started dispatcher is woken by NOTIFY, not only by nudges). */
  readonly listen?: boolean
  /** The dispatcher's fallback poll (default 1 s). */
  readonly pollIntervalMs?: number
}

/**
 * The time-travel harness: a real PostgreSQL database, a real loopback receiver answering from
 * a script, and the real dispatcher driven one `step()` at a time on a fake clock.
 */
export async function engineHarness(options: HarnessOptions = {}) {
  // The engine runs as the service's own database role, as `serve` does (the baseline migration).
  const database: TestDatabase = options.database ?? (await testDatabase({ role: 'service' }))
  const clock = new FakeClock(options.start)
  const receiver = await new TestReceiver(options.reply).start()
  const secretBox = createSecretBox(options.masterKey ?? generateMasterKey())
  const transport = createHttpTransport({
    policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }),
    timeoutMs: options.transportTimeoutMs ?? 2_000,
    ...(options.proxy ? { proxy: options.proxy } : {}),
  })
  const catalog = createEventCatalog()
  const notifier = options.listen ? createPgNotifier(database.url) : null
  const dispatcher = new Dispatcher({
    db: database.db,
    clock,
    transport,
    secretBox,
    catalog,
    embedAdmits: options.embedAdmits ?? (async () => false),
    workerId: 'harness',
    concurrency: options.concurrency ?? 16,
    ...(options.turnShare !== undefined ? { turnShare: options.turnShare } : {}),
    ...(options.snoozeBudget ? { snoozeBudget: options.snoozeBudget } : {}),
    ...(options.deliveryRetentionDays !== undefined ? { deliveryRetentionDays: options.deliveryRetentionDays } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(notifier ? { notifier } : {}),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
  })
  const owner = 'default'
  let seq = 0

  return {
    db: database.db,
    url: database.url,
    /** This database as one of the install's login roles, and that role's name. */
    roleUrl: database.roleUrl,
    roleName: (role: 'service' | 'publisher' | 'reader') => new URL(database.roleUrl(role)).username,
    clock,
    receiver,
    dispatcher,
    secretBox,
    owner,
    /** Creates an endpoint (through the store's one writer) pointing at the receiver. */
    async createEndpoint(
      /** `owner_id`: another owner's endpoint (default: the harness's owner). */
      input: { url?: string; event_types?: string[]; embed_id?: string | null; signature_scheme?: SignatureScheme; owner_id?: string } = {},
    ) {
      const secret = generateWebhookSecret()
      const scheme = input.signature_scheme ?? 'v1'
      // The whsk_ key is sealed at once and never returned; tests verify with the row's whpk_.
      const pair = signsV1a(scheme) ? generateV1aKeyPair() : null
      const endpoint: EndpointRow = await database.db.transaction().execute((trx) =>
        endpointCreate(
          trx,
          { owner_id: input.owner_id ?? owner, now: clock.now(), actor: 'owner:test' },
          {
            url: input.url ?? receiver.url(),
            description: '',
            event_types: input.event_types ?? ['*'],
            embed_id: input.embed_id ?? null,
            secret_sealed: secretBox.seal(secret),
            secret_key_id: secretKeyId(secret),
            signature_scheme: scheme,
            v1a_key: pair && { sealed: secretBox.seal(pair.secretKey), public_key: pair.publicKey },
          },
        ),
      )
      return { endpoint, secret }
    },
    /** Publishes an event at the clock's now (as `ownerId`: default the harness's owner). */
    async publish(event: Partial<EventToPublish> = {}, ownerId = owner) {
      const e: EventToPublish = {
        id: event.id ?? `evt_${++seq}`,
        type: event.type ?? 'booking.created',
        subject: event.subject ?? `booking://${seq}`,
        occurred_at: event.occurred_at ?? clock.now(),
        data: event.data ?? {},
      }
      await database.db
        .transaction()
        .execute((trx) => eventInsert(trx, { owner_id: ownerId, event: e, now: clock.now(), actor: 'system' }))
      return e
    },
    /** The delivery row of an event (one endpoint). */
    deliveryOf: (eventId: string) =>
      database.db.selectFrom('deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow(),
    /** An endpoint row, deleted or not. */
    endpointOf: (id: string) =>
      database.db.selectFrom('endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    /**
     * The ledger entries about one delivery or one endpoint, in order. A delivery's start with
     * its enqueue: its own row, or (ledger format 3) the one its event's fan-out decision
     * implies, at the decision's position (`by_fanout`, deliveryLedgerEntries).
     */
    ledgerOf: async (column: 'delivery_id' | 'endpoint_id', id: string) => {
      if (column === 'delivery_id') {
        const owner = (await database.db.selectFrom('delivery_origins').select('owner_id').where('id', '=', id).executeTakeFirst())?.owner_id
          ?? (await database.db.selectFrom('ledger').select('owner_id').where('delivery_id', '=', id).limit(1).executeTakeFirst())?.owner_id
        if (owner === undefined) return []
        const entries = (await deliveryLedgerEntries(database.db, owner, [id])).get(id)!
        return entries.map(({ position, kind, occurred_at, payload, actor, delivery_id }) => ({ position, kind, occurred_at, payload: payload as Record<string, unknown>, actor, delivery_id }))
      }
      return database.db
        .selectFrom('ledger')
        .select(['position', 'kind', 'occurred_at', 'payload', 'actor', 'delivery_id'])
        .where(column, '=', id)
        .orderBy('position')
        .execute()
    },
    /** One dispatcher step at the current fake time. */
    step: () => dispatcher.runOnce(),
    /** Replays the ledger and returns the differences (none on a healthy database). */
    replay: () => ledgerReplayVerify(database.db),
    async close() {
      await dispatcher.stop()
      await notifier?.close()
      await transport.close()
      await receiver.close()
      await database.close()
    },
  }
}

export type EngineHarness = Awaited<ReturnType<typeof engineHarness>>
