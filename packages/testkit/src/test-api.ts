/**
 * The real HTTP app on a given database, called in-process with `app.request()` (for the api's
 * tests and any other that calls the routes).
 */
import {
  createEgressPolicy,
  createEventCatalog,
  createSecretBox,
  generateMasterKey,
  silentLogger,
  systemClock,
  type Clock,
  type EventCatalog,
  type Logger,
  type SecretBox,
} from '@hookledger/core'
import { generateLedgerSigningKey, parseLedgerSigningKey } from '@hookledger/ledger'
import { heldLedgerKeys, type OpDeps } from '@hookledger/ops'
import { sql } from 'kysely'
import { apiTokenCreate, type Db, type TokenScope } from '@hookledger/store'
import { createApi } from '@hookledger/api'

export interface TestApiOptions {
  readonly clock?: Clock
  readonly catalog?: EventCatalog
  readonly logger?: Logger
  /** The dispatcher under test must unseal with the same box. */
  readonly secretBox?: SecretBox
  /** CIDRs the egress guard admits; loopback by default so a local receiver works. */
  readonly egressAllow?: readonly string[]
}

/** Operation dependencies for tests: a fresh master key, loopback allowed. */
export function testOpDeps(db: Db, options: TestApiOptions = {}): OpDeps {
  return {
    db,
    clock: options.clock ?? systemClock,
    secretBox: options.secretBox ?? createSecretBox(generateMasterKey()),
    egressPolicy: createEgressPolicy({ allow: options.egressAllow ?? ['127.0.0.0/8'] }),
    catalog: options.catalog ?? createEventCatalog(),
    logger: options.logger ?? silentLogger,
    rotationGraceMs: 24 * 3_600_000,
    publicBaseUrl: 'http://hookledger.test',
    ledgerKeys: heldLedgerKeys(parseLedgerSigningKey(generateLedgerSigningKey().secret)),
  }
}

/** One answer, read whole. `body` is the parsed JSON (or null). */
export interface ApiAnswer {
  readonly status: number
  readonly contentType: string
  readonly headers: Headers
  readonly text: string
  // `any`: tests read arbitrary fields of answers.
  readonly body: any
}

export interface CallOptions {
  readonly token?: string | undefined
  /** Sent as JSON with `content-type: application/json`. */
  readonly body?: unknown
  /** Sent as is (overrides `body`). */
  readonly raw?: string
  readonly headers?: Record<string, string>
}

/** The app, its dependencies, and a way to mint tokens and call routes. */
export function testApi(db: Db, options: TestApiOptions = {}) {
  const deps = testOpDeps(db, options)
  const app = createApi({ deps })
  return {
    app,
    deps,
    /** A bearer token for `owner` with `scopes` (an operator token ignores the owner). */
    async token(owner: string, scopes: TokenScope[]): Promise<string> {
      const owner_id = scopes.includes('operator') ? '*' : owner
      return (await apiTokenCreate(db, { owner_id, scopes, now: deps.clock.now() })).token
    },
    async call(method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer> {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
      let body: string | undefined
      if (options.raw !== undefined) body = options.raw
      else if (options.body !== undefined) body = JSON.stringify(options.body)
      if (
        body !== undefined &&
        !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
      ) {
        headers['content-type'] = 'application/json'
      }
      const res = await app.request(path, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
      })
      const text = await res.text()
      let parsed: unknown = null
      try {
        parsed = text ? JSON.parse(text) : null
      } catch {
        parsed = null
      }
      return {
        status: res.status,
        contentType: res.headers.get('content-type') ?? '',
        headers: res.headers,
        text,
        body: parsed,
      }
    },
  }
}

export type TestApi = ReturnType<typeof testApi>

/**
 * For tests: a digest of every table's whole content (rows as text, sorted), one entry per
 * table, so "the database is unchanged" can be asserted after a refused request.
 */
export async function dbFingerprint(db: Db): Promise<Record<string, string>> {
  const tables = (
    await sql<{ name: string }>`
      select table_name as name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name
    `.execute(db)
  ).rows.map((r) => r.name)
  const parts = tables.map(
    (t) =>
      sql`
        select ${t} as name,
          md5(coalesce(string_agg(x::text, '|' order by x::text), '')) || ':' || count(*) as digest
        from ${sql.table(t)} x
      `,
  )
  const rows = (
    await sql<{ name: string; digest: string }>`${sql.join(parts, sql` union all `)}`.execute(db)
  ).rows
  return Object.fromEntries(rows.map((r) => [r.name, r.digest]))
}
