import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import {
  createSecretBox,
  encodeMasterKey,
  generateMasterKey,
  generateWebhookSecret,
  secretKeyId,
} from '@hookledger/core'
import { generateLedgerSigningKey } from '@hookledger/ledger'
import { apiTokenCreate, createDb, endpointCreate, eventInsert, migrateToLatest, type Db } from '@hookledger/store'
import { freePort, openEmbeddedDatabase, runningCluster, type EmbeddedDatabase } from '@hookledger/embedded'
import { eventually, removeDataDir, within } from '@hookledger/testkit'
import { startServe } from '../e2e/cli-process.js'
import type { ReceiverHit, VerifyingReceiver } from './verifying-receiver.js'
export type { ReceiverHit } from './verifying-receiver.js'

export { VerifyingReceiver } from './verifying-receiver.js'

/** `FAULTS_SCALE=full` runs the issue's numbers; the default `small` keeps `npm test` fast. */
export const SCALE = process.env['FAULTS_SCALE'] === 'full' ? 'full' : 'small'
export const scaled = <T>(small: T, full: T): T => (SCALE === 'full' ? full : small)

/** Seed types with webhook exposure: endpoint `n` subscribes to the `n`-th, so each event has one delivery. */
const EVENT_TYPES = [
  'booking.created', 'booking.cancelled', 'booking.rescheduled', 'code.issued', 'code.revoked', 'code.redeemed',
  'conversation.started', 'conversation.message', 'writing.published', 'writing.unpublished', 'supplier.connected', 'supplier.activated',
]

/** One event to publish and the endpoint (index) it is for. */
export interface FaultEvent {
  readonly id: string
  readonly type: string
  readonly endpoint: number
}

/** `count` events spread round-robin over `endpoints` endpoints. */
export function faultEvents(count: number, endpoints: number): FaultEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `evt_${String(i).padStart(5, '0')}`, type: EVENT_TYPES[i % endpoints]!, endpoint: i % endpoints }))
}

/** A running `hookledger serve` child, as startServe gives it, plus whether it has exited. */
export type Serve = Awaited<ReturnType<typeof startServe>> & { exited: () => boolean }

/**
 * What one fault file owns: a PostgreSQL cluster of its own (own data dir, a fixed port so the
 * service's DATABASE_URL stays valid across restarts) that the file stops and starts, the
 * service settings and keys, and every `serve` process it started.
 */
export class FaultRig {
  readonly root = mkdtempSync(path.join(tmpdir(), 'hookledger-faults-'))
  readonly #pgDir = path.join(this.root, 'pg-data')
  readonly #key = generateMasterKey()
  readonly #signingKey = generateLedgerSigningKey().secret
  readonly #serves: Serve[] = []
  #cluster: EmbeddedDatabase | null = null
  #pool: pg.Pool | null = null
  port = 0
  outages = 0
  /** The file's own connection (setup and checks); survives outages, as the pool replaces connections. */
  db!: Db

  async open(): Promise<this> {
    this.port = await freePort()
    await this.startDatabase()
    this.#pool = new pg.Pool({ connectionString: this.databaseUrl(), max: 3 })
    // The cluster is stopped under this pool on purpose: a dropped connection must not crash the test.
    this.#pool.on('error', () => {})
    this.#pool.on('connect', (client) => client.on('error', () => {}))
    this.db = createDb(this.#pool)
    await migrateToLatest(this.db)
    return this
  }

  /** The cluster's URL, or the same through another port (a proxy in front of it). */
  databaseUrl(port = this.port): string {
    return Object.assign(new URL(this.#cluster!.url('postgres')), { port: String(port) }).toString()
  }

  async startDatabase(): Promise<void> {
    this.#cluster = await openEmbeddedDatabase({ dataDir: this.#pgDir, port: this.port, settings: { fsync: 'off' } })
  }

  /**
   * `fast` is `pg_ctl stop -m fast`: every session is terminated (57P01), then new connections
   * are refused. `immediate` is what `pg_ctl stop -m immediate` sends, SIGQUIT to the
   * postmaster: sessions just drop, and the next start runs crash recovery.
   */
  async stopDatabase(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if (mode === 'immediate' && this.#cluster) {
      const { clusterDir } = this.#cluster
      const running = runningCluster(clusterDir)
      if (running) process.kill(running.pid, 'SIGQUIT')
      await eventually('the postmaster to exit', () => runningCluster(clusterDir) === null)
    }
    await this.#cluster?.stop()
  }

  /** The fault itself: the database is down for `ms`, then back. */
  async outage(ms: number, options: { mode?: 'fast' | 'immediate'; whileDown?: () => Promise<void> } = {}): Promise<void> {
    await this.stopDatabase(options.mode)
    this.outages++
    const held = new Promise((r) => setTimeout(r, ms))
    await options.whileDown?.()
    await held
    await this.startDatabase()
  }

  /** Service settings: short job timeout (lease 3 s) and a 1 s rescuer, so a fault heals in seconds. */
  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      DATABASE_URL: this.databaseUrl(),
      HOOKLEDGER_DATA_DIR: path.join(this.root, 'data'),
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(this.#key),
      HOOKLEDGER_LEDGER_SIGNING_KEY: this.#signingKey,
      HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
      HOOKLEDGER_JOB_TIMEOUT_SECONDS: '1',
      HOOKLEDGER_MAINTENANCE_INTERVAL_SECONDS: '1',
      HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS: '1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      ...extra,
    }
  }

  /** Starts `hookledger serve …`; kept for cleanup. */
  async serve(args: string[], env: NodeJS.ProcessEnv = this.env(), onOutput?: (output: string) => void): Promise<Serve> {
    const started = await startServe(args, env, onOutput)
    let exited = false
    void started.exit.then(() => (exited = true))
    const serve = Object.assign(started, { exited: () => exited })
    this.#serves.push(serve)
    return serve
  }

  /** `kill -9` of the service itself (its own pid, not the group): no shutdown path runs. */
  async kill9(serve: Serve): Promise<void> {
    process.kill(serve.pid, 'SIGKILL')
    await serve.exit
  }

  /** SIGTERM: drains and exits; resolves with the exit code. */
  async terminate(serve: Serve): Promise<number | null> {
    if (!serve.exited()) process.kill(serve.pid, 'SIGTERM')
    // A stop that hangs fails here, with what the service printed, not as the test's timeout.
    return within(() => `the service (pid ${serve.pid}) to exit after SIGTERM; it printed:\n${serve.output().slice(-3_000)}`, 45_000, serve.exit)
  }

  /** One endpoint per index, each subscribed to its own event type, answering at the receiver's `/ep/<n>`. */
  async createEndpoints(receiver: VerifyingReceiver, count: number): Promise<string[]> {
    const box = createSecretBox(this.#key)
    const ids: string[] = []
    for (let n = 0; n < count; n++) {
      const secret = generateWebhookSecret()
      const endpoint = await this.db.transaction().execute((trx) =>
        endpointCreate(
          trx,
          { owner_id: 'default', now: new Date(), actor: 'owner:faults' },
          { url: receiver.url(n), description: '', event_types: [EVENT_TYPES[n]!], embed_id: null, secret_sealed: box.seal(secret), secret_key_id: secretKeyId(secret) },
        ),
      )
      ids.push(endpoint.id)
    }
    return ids
  }

  /** A token for owner `default`. */
  async token(scopes: ('admin' | 'publish')[]): Promise<string> {
    return (await apiTokenCreate(this.db, { owner_id: 'default', scopes, now: new Date() })).token
  }

  /** Publishes as the application would, in its own transactions (50 events each). */
  async publishViaStore(events: FaultEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += 50) {
      await this.db.transaction().execute(async (trx) => {
        for (const e of events.slice(i, i + 50)) {
          const now = new Date()
          await eventInsert(trx, { owner_id: 'default', event: { id: e.id, type: e.type, subject: `booking://${e.id}`, occurred_at: now, data: {} }, now, actor: 'system' })
        }
      })
    }
  }

  /** Publishes through the HTTP API, `parallel` requests at a time; each must be accepted. */
  async publishViaApi(url: string, token: string, events: FaultEvent[], parallel = 8): Promise<void> {
    const queue = [...events]
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        for (let e = queue.shift(); e; e = queue.shift()) {
          const res = await publishOne(url, token, e)
          if (res.status !== 202 && res.status !== 200) throw new Error(`publish ${e.id}: ${res.status} ${await res.text()}`)
        }
      }),
    )
  }

  /** Deliveries not yet completed, or null while the database cannot say. */
  async openDeliveries(): Promise<number | null> {
    try {
      const { rows } = await sql<{ n: string }>`select count(*) as n from deliveries where state <> 'completed'`.execute(this.db)
      return Number(rows[0]!.n)
    } catch {
      return null
    }
  }

  /** Waits for every event to be answered by its endpoint and every delivery to be completed. */
  async drained(receiver: VerifyingReceiver, events: FaultEvent[], timeoutMs: number): Promise<void> {
    await eventually(
      'every delivery answered and completed',
      async () => tally(receiver, events).lost === 0 && (await this.deliveryCount()) === events.length && (await this.openDeliveries()) === 0,
      { timeoutMs, everyMs: 200 },
    )
  }

  async deliveryCount(): Promise<number | null> {
    try {
      const { rows } = await sql<{ n: string }>`select count(*) as n from deliveries`.execute(this.db)
      return Number(rows[0]!.n)
    } catch {
      return null
    }
  }

  /**
   * Why an endpoint had two requests in flight: each overlap (times relative to the first
   * request of the run) and the ledger of the deliveries involved. The failure message.
   */
  async describeOverlaps(receiver: VerifyingReceiver): Promise<string> {
    if (receiver.overlaps.length === 0) return 'no overlaps'
    const t0 = receiver.hits[0]?.receivedAt ?? 0
    const at = (h: ReceiverHit) => `${h.eventId} received +${Math.round(h.receivedAt - t0)} ms, answered ${h.answeredAt === null ? 'never' : `+${Math.round(h.answeredAt - t0)} ms`}`
    const lines: string[] = []
    for (const o of receiver.overlaps.slice(0, 5)) {
      lines.push(`endpoint ${o.endpoint}: ${at(o.arrived)} while in flight: ${o.inFlight.map(at).join('; ')}`)
      for (const eventId of [o.arrived.eventId, ...o.inFlight.map((h) => h.eventId)]) {
        const rows = await this.db.selectFrom('ledger').select(['position', 'occurred_at', 'kind', 'actor', 'payload']).where('event_id', '=', eventId).orderBy('position').execute()
        for (const r of rows) lines.push(`  ${eventId} #${r.position} ${r.occurred_at.toISOString()} ${r.kind} ${r.actor} ${JSON.stringify(r.payload).slice(0, 300)}`)
      }
    }
    return `${receiver.overlaps.length} overlaps:\n${lines.join('\n')}`
  }

  /** Kills whatever is still running, stops the cluster and removes every file. */
  async close(): Promise<void> {
    for (const s of this.#serves) if (!s.exited()) await this.kill9(s).catch(() => {})
    await this.db?.destroy().catch(() => {})
    await this.stopDatabase().catch(() => {})
    removeDataDir(this.#pgDir)
    rmSync(this.root, { recursive: true, force: true })
  }
}

/** `POST /api/events` for one event; the answer is the caller's to judge. */
export async function publishOne(url: string, token: string, e: FaultEvent, options: { timeoutMs?: number } = {}): Promise<Response> {
  const res = await fetch(`${url}/api/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: e.id, type: e.type, subject: `booking://${e.id}`, data: {} }),
    ...(options.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(options.timeoutMs) }),
  })
  return res
}

/** What a run ends with, from the receiver's side. */
export interface Tally {
  published: number
  delivered: number
  lost: number
  /** Requests beyond the first for one event (at-least-once re-sends). */
  duplicated: number
  maxInFlightPerEndpoint: number
}

export function tally(receiver: VerifyingReceiver, events: FaultEvent[]): Tally {
  const answered = receiver.answered()
  const delivered = events.filter((e) => answered.has(`${e.endpoint}/${e.id}`)).length
  const received = new Set(receiver.hits.map((h) => `${h.endpoint}/${h.eventId}`))
  return {
    published: events.length,
    delivered,
    lost: events.length - delivered,
    duplicated: receiver.hits.length - received.size,
    maxInFlightPerEndpoint: receiver.maxInFlightPerEndpoint(),
  }
}

/** Prints the scenario's one-line report, e.g. `faults: db-restarts published=200 delivered=200 lost=0 …`. */
export function report(scenario: string, t: Tally, extra: Record<string, string | number> = {}): void {
  const fields = {
    published: t.published,
    delivered: t.delivered,
    lost: t.lost,
    duplicated: t.duplicated,
    ...extra,
    max_in_flight_per_endpoint: t.maxInFlightPerEndpoint,
  }
  console.log(`faults: ${scenario} scale=${SCALE} ${Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ')}`)
}
