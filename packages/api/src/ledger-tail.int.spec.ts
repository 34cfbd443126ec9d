/**
 * The ledger feed pages in chain order, (tx_id, position), below the visibility horizon: two
 * real transactions on two connections draw positions in the opposite order of their xids, and
 * a tailer following next_cursor sees both rows once, where position paging skips one.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sql, type Kysely } from 'kysely'
import { apiTokenCreate, OPERATOR_OWNER, type Database, type Db } from '@hookledger/store'
import { ledgerCursor, ledgerRead, ledgerReadQuery, parseLedgerCursor, type LedgerChainRow } from '@hookledger/ledger'
import { eventually, testDatabase, type TestDatabase, testApi, type TestApi } from '@hookledger/testkit'

let database: TestDatabase
let db: Db
let api: TestApi
let operator: string

beforeAll(async () => {
  // Two held connections, a reader, the API: more than the default four.
  database = await testDatabase({ poolSize: 8 })
  db = database.db
  api = testApi(db)
  const token = await apiTokenCreate(db, {
    owner_id: OPERATOR_OWNER, // '*': an operator token is bound to no owner
    scopes: ['operator'],
    now: new Date(),
  })
  operator = token.token
})
afterAll(() => database.close())

/** One pooled connection held until `release()`, for a transaction driven step by step. */
interface Held {
  readonly conn: Kysely<Database>
  release(): Promise<void>
}

const held: Held[] = []
afterEach(async () => {
  // A failed test must not leave a transaction open (it would hold back every later read).
  for (const h of held.splice(0)) {
    await sql`rollback`.execute(h.conn).catch(() => {})
    await h.release()
  }
})

async function hold(): Promise<Held> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let conn!: Kysely<Database>
  let done!: Promise<void>
  await new Promise<void>((ready) => {
    done = db.connection().execute(async (c) => {
      conn = c
      ready()
      await released
    })
  })
  const h: Held = {
    conn,
    release: async () => {
      release()
      await done
    },
  }
  held.push(h)
  return h
}

const xactId = async (conn: Kysely<Database>) =>
  (await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(conn)).rows[0]!.xid

let seq = 0
/** Appends one ledger row with plain SQL (inserts are what an append-only ledger allows). */
async function insertEntry(conn: Kysely<Database>, owner = 'acme'): Promise<string> {
  seq++
  const payload = JSON.stringify({ type: 'booking.created', subject: `booking://${seq}` })
  return (
    await sql<{ position: string }>`
      insert into ledger (occurred_at, owner_id, kind, event_id, payload, actor)
      values (now(), ${owner}, 'event.published', ${`evt_${seq}`}, ${payload}::jsonb, 'test')
      returning position
    `.execute(conn)
  ).rows[0]!.position
}

/** True once every transaction with an xid ≤ `xid` has ended: its rows are final. */
const horizonPassed = async (xid: string) =>
  (
    await sql<{ passed: boolean }>`
      select pg_snapshot_xmin(pg_current_snapshot()) > ${xid}::xid8 as passed
    `.execute(db)
  ).rows[0]!.passed

/**
 * Waits for a state (not a time): the database is shared by every test file in flight, and any
 * transaction of theirs older than ours holds the horizon back until it ends.
 */
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  return (await eventually(what, probe, { timeoutMs: 15_000, everyMs: 10 })) as T
}

/** A reader of the feed: one page after `cursor` (null: from the start). */
type FeedPage = { data: { position: string; tx_id: string }[]; next_cursor: string | null }
type ReadPage = (cursor: string | null, limit: number) => Promise<FeedPage>

const storeReader: ReadPage = (cursor, limit) =>
  ledgerRead(db, { limit, ...(cursor !== null ? { after: cursor } : {}) })

const httpReader: ReadPage = async (cursor, limit) => {
  const query = new URLSearchParams({ limit: String(limit) })
  if (cursor !== null) query.set('cursor', cursor)
  const res = await api.call('GET', `/api/operator/ledger?${query}`, { token: operator })
  expect(res.status, res.text).toBe(200)
  return res.body as FeedPage
}

/**
 * A tailer: reads pages until one comes back empty, remembering where it stopped. Small pages,
 * so it crosses page boundaries; when a page is not full (next_cursor null) it resumes after the
 * last row it read.
 */
function tailer(read: ReadPage, limit = 1) {
  let cursor: string | null = null
  const seen: { position: string; tx_id: string }[] = []
  return {
    seen,
    async drain() {
      for (;;) {
        const page = await read(cursor, limit)
        seen.push(...page.data.map((r) => ({ position: String(r.position), tx_id: r.tx_id })))
        const last = page.data[page.data.length - 1]
        cursor = page.next_cursor ?? (last ? ledgerCursor(last) : cursor)
        if (page.data.length === 0) return
      }
    },
  }
}

/** The feed as it paged before chain cursors: `position > cursor`, below the horizon. */
function positionTailer(limit = 1) {
  let after = '0'
  const seen: string[] = []
  return {
    seen,
    async drain() {
      for (;;) {
        const rows = (
          await sql<{ position: string }>`
            select position from ledger
            where position > ${after}::bigint
              and tx_id < pg_snapshot_xmin(pg_current_snapshot())
            order by position limit ${limit}
          `.execute(db)
        ).rows
        seen.push(...rows.map((r) => r.position))
        if (rows.length === 0) return
        after = rows[rows.length - 1]!.position
      }
    },
  }
}

describe.each([
  ['ledgerRead (store)', storeReader],
  ['GET /api/operator/ledger (operator token)', httpReader],
])('tailing the ledger through %s', (_name, read) => {
  it('sees a late commit below a position already read, once; position paging skips it', async () => {
    await insertEntry(db) // committed history before the race
    const feed = tailer(read)
    const legacy = positionTailer()

    const a = await hold()
    const b = await hold()
    await sql`begin`.execute(a.conn)
    const xa = await xactId(a.conn) // A takes the lower xid…
    await sql`begin`.execute(b.conn)
    const xb = await xactId(b.conn)
    expect(BigInt(xb)).toBeGreaterThan(BigInt(xa))
    const low = await insertEntry(b.conn) // …B draws the lower position…
    const high = await insertEntry(a.conn)
    expect(BigInt(high)).toBeGreaterThan(BigInt(low))

    // Both open: neither row is below the horizon (every running xid is ≥ xmin).
    await feed.drain()
    await legacy.drain()
    expect(feed.seen.map((r) => r.position)).not.toContain(high)
    expect(feed.seen.map((r) => r.position)).not.toContain(low)

    // …A, the higher position, commits first; B still runs.
    await sql`commit`.execute(a.conn)
    await until('A below the horizon', async () => ((await horizonPassed(xa)) ? true : undefined))
    await feed.drain()
    await legacy.drain()
    expect(feed.seen.at(-1)).toEqual({ position: high, tx_id: xa })
    expect(legacy.seen.at(-1)).toBe(high) // position paging has passed `high`…
    expect(feed.seen.map((r) => r.position)).not.toContain(low) // B runs: not final yet

    // …and B, the lower position, commits last.
    await sql`commit`.execute(b.conn)
    await until('B below the horizon', async () => ((await horizonPassed(xb)) ? true : undefined))
    await feed.drain()
    await legacy.drain()

    // The chain tailer has both rows, in (tx_id, position) order, none twice…
    const positions = feed.seen.map((r) => r.position)
    expect(positions.slice(-2)).toEqual([high, low])
    expect(feed.seen.slice(-2)).toEqual([
      { position: high, tx_id: xa },
      { position: low, tx_id: xb },
    ])
    expect(new Set(positions).size).toBe(positions.length)
    const all = (
      await sql<{ position: string }>`select position from ledger order by position`.execute(db)
    ).rows.map((r) => r.position)
    expect([...positions].sort((x, y) => Number(BigInt(x) - BigInt(y)))).toEqual(all)

    // …while position paging skipped `low` for good: B is final (below the horizon), and
    // `position > high` can never return it.
    expect(legacy.seen).toContain(high)
    expect(legacy.seen).not.toContain(low)
    const afterHigh = (
      await sql<{ position: string }>`
        select position from ledger
        where position > ${high}::bigint and tx_id < pg_snapshot_xmin(pg_current_snapshot())
      `.execute(db)
    ).rows.map((r) => r.position)
    expect(afterHigh).not.toContain(low)
    expect(all).toContain(low)
  })
})

describe('ledger.read cursors', () => {
  it('pages in chain order with opaque <tx_id>.<position> cursors, filters applied', async () => {
    // Rows of several transactions and owners; every one is final once the horizon passes.
    let lastXid = '0'
    for (let t = 0; t < 5; t++) {
      lastXid = await db.transaction().execute(async (trx) => {
        await insertEntry(trx, 'acme')
        await insertEntry(trx, 'globex')
        await insertEntry(trx, 'acme')
        return xactId(trx)
      })
    }
    await until('the writes below the horizon', async () =>
      (await horizonPassed(lastXid)) ? true : undefined,
    )
    const expected = (
      await sql<{ position: string; tx_id: string }>`
        select position, tx_id from ledger where owner_id = 'acme' order by tx_id, position
      `.execute(db)
    ).rows
    const got: FeedPage['data'] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query = new URLSearchParams({ limit: '3', owner_id: 'acme' })
      if (cursor) query.set(pages % 2 ? 'after' : 'cursor', cursor) // both names mean the same
      const res = await api.call('GET', `/api/operator/ledger?${query}`, { token: operator })
      expect(res.status, res.text).toBe(200)
      const body = res.body as {
        data: { position: string; tx_id: string; owner_id: string }[]
        next_cursor: string | null
      }
      expect(body.data.every((e) => e.owner_id === 'acme')).toBe(true)
      got.push(...body.data.map((e) => ({ position: e.position, tx_id: e.tx_id })))
      cursor = body.next_cursor
      if (cursor !== null) {
        const last = body.data[body.data.length - 1]!
        expect(cursor).toBe(`${last.tx_id}.${last.position}`)
        expect(parseLedgerCursor(cursor)).toEqual({ tx_id: last.tx_id, position: last.position })
      }
      pages++
    } while (cursor !== null)
    expect(got).toEqual(expected)
    expect(pages).toBeGreaterThan(2)
  })

  it('refuses what is not a cursor with 400 naming the field', async () => {
    const bad = [
      'abc',
      '',
      '-5',
      '1e3',
      '0x10',
      '1.',
      '.1',
      '1.2.3',
      '1,2',
      ' 1.2',
      '-1.2',
      '1.-2',
      '18446744073709551616.1', // xid8 ends at 2^64 - 1
      '1.9223372036854775808', // bigint ends at 2^63 - 1
      '42', // a bare position: the feed pages by chain cursor only
      '0',
      '9223372036854775807',
      '99999999999999999999',
      'MTIzLjQ1', // base64 of "123.45": not ours
    ]
    for (const field of ['after', 'cursor']) {
      for (const value of bad) {
        const res = await api.call(
          'GET',
          `/api/operator/ledger?${new URLSearchParams({ [field]: value })}`,
          { token: operator },
        )
        expect(res.status, `${field}=${JSON.stringify(value)}: ${res.text}`).toBe(400)
        expect(res.body).toMatchObject({ code: 'invalid_input', field })
      }
    }
    const good = [
      '0.0',
      '18446744073709551615.9223372036854775807',
    ]
    for (const value of good) {
      const res = await api.call('GET', `/api/operator/ledger?cursor=${value}`, {
        token: operator,
      })
      expect(res.status, `${value}: ${res.text}`).toBe(200)
    }
  })
})

describe('the feed query', () => {
  it('is one range scan of ledger_chain_order_idx (tx_id, position)', async () => {
    // Some thousands of rows from many transactions, then fresh statistics.
    let lastXid = '0'
    for (let t = 0; t < 40; t++) {
      lastXid = await db.transaction().execute(async (trx) => {
        await sql`
          insert into ledger (occurred_at, owner_id, kind, event_id, payload, actor)
          select now(), 'owner_' || (i % 7), 'event.published', 'evt_bulk_' || ${t} || '_' || i,
            jsonb_build_object('type', 'booking.created', 'subject', 'booking://' || i), 'test'
          from generate_series(1, 100) i
        `.execute(trx)
        return xactId(trx)
      })
    }
    await sql`analyze ledger`.execute(db)
    await until('the writes below the horizon', async () =>
      (await horizonPassed(lastXid)) ? true : undefined,
    )
    const middle = (
      await sql<LedgerChainRow>`
        select tx_id, position from ledger order by tx_id, position offset 2000 limit 1
      `.execute(db)
    ).rows[0]!
    const start = { tx_id: middle.tx_id, position: middle.position }
    const plan = async (q: ReturnType<typeof ledgerReadQuery>) =>
      (await sql<{ 'QUERY PLAN': string }>`explain ${q}`.execute(db)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n')

    // The ledger is range-partitioned (0011): one chain-order index range scan per partition,
    // merged in order (a Merge Append, whose "Sort Key" is the merge order, not a sort).
    const chainIndexScan = /Index Scan using (ledger_chain_order_idx|ledger_p_\w+?(chain_order|tx_id_position)_idx) on ledger/
    const sortOrSeqScan = /(->|^)\s*Sort\s+\(cost|Seq Scan/m
    const chain = await plan(ledgerReadQuery({ start, limit: 50 }))
    console.log(`EXPLAIN ledger.read (cursor, limit 50):\n${chain}`)
    expect(chain).toMatch(chainIndexScan)
    // The whole cursor is the index condition, so a page inside one large transaction (a
    // publishMany of 100,000 events) seeks to its row. Keyed on tx_id alone, the index read
    // and sorted the rest of that transaction for every page: 118 ms against 0.09 ms a page
    // of 50 in a 200,000-row transaction (tried and reverted, docs/performance.md).
    expect(chain).toMatch(/Index Cond: .*ROW\(tx_id, "?position"?\) > ROW\(/)
    expect(chain).toMatch(/Index Cond: .*tx_id < pg_snapshot_xmin\(pg_current_snapshot\(\)\)/)
    expect(chain).not.toMatch(sortOrSeqScan)

    const first = await plan(ledgerReadQuery({ limit: 50 }))
    console.log(`EXPLAIN ledger.read (from the start, limit 50):\n${first}`)
    expect(first).toMatch(chainIndexScan)
    expect(first).not.toMatch(sortOrSeqScan)

    const filtered = await plan(ledgerReadQuery({ start, limit: 50, owner_id: 'owner_3' }))
    console.log(`EXPLAIN ledger.read (cursor, owner_id, limit 50):\n${filtered}`)
    expect(filtered).toMatch(chainIndexScan)

    // And the pages it gives are the chain order, across the bulk transactions.
    const page = await ledgerRead(db, { after: ledgerCursor(middle), limit: 200 })
    const expected = (
      await sql<{ position: string }>`
        select position from ledger
        where (tx_id, position) > (${middle.tx_id}::xid8, ${middle.position}::bigint)
        order by tx_id, position limit 200
      `.execute(db)
    ).rows.map((r) => r.position)
    expect(page.data.map((r) => r.position)).toEqual(expected)
    expect(page.next_cursor).toBe(ledgerCursor(page.data[199]!))
  })
})
