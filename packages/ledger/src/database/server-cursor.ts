/**
 * A server-side cursor (replay, chain verify, export) read a batch at a time (`declare … cursor` + `fetch forward N`), with the
 * next batch always requested while the caller works through the current one. Memory is two
 * batches whatever the size of the result. Cursors live in the caller's transaction: all of a
 * replay's cursors read the same snapshot.
 */
import { sql, type RawBuilder } from 'kysely'
import type { Trx } from '@hookledger/store'

/** How many rows a replay's cursors hold at once, over all of them (batches in hand and in flight). */
export class BufferGauge {
  held = 0
  peak = 0
  add(n: number): void {
    this.held += n
    if (this.held > this.peak) this.peak = this.held
  }
}

export class ServerCursor<T> {
  readonly #trx: Trx
  readonly #name: string
  readonly #batch: number
  readonly #gauge: BufferGauge
  #rows: T[] = []
  #at = 0
  #next: Promise<T[]> | null = null
  #nextSize = 0
  #ended = false

  private constructor(trx: Trx, name: string, batch: number, gauge: BufferGauge) {
    this.#trx = trx
    this.#name = name
    this.#batch = batch
    this.#gauge = gauge
  }

  /** Declares the cursor and asks for its first batch. */
  static async open<T>(trx: Trx, name: string, query: RawBuilder<unknown>, batch: number, gauge: BufferGauge): Promise<ServerCursor<T>> {
    await sql`declare ${sql.ref(name)} no scroll cursor for ${query}`.execute(trx)
    const cursor = new ServerCursor<T>(trx, name, batch, gauge)
    cursor.#request()
    return cursor
  }

  #request(): void {
    this.#next = sql<T>`fetch forward ${sql.raw(String(this.#batch))} from ${sql.ref(this.#name)}`
      .execute(this.#trx)
      .then((r) => {
        this.#nextSize = r.rows.length
        this.#gauge.add(r.rows.length)
        return r.rows
      })
    // A batch nobody waits for any more (the replay failed elsewhere) must not fail the process.
    this.#next.catch(() => {})
  }

  /** The current row; undefined when the batch in hand is used up (see `needsFetch`) or at the end. */
  head(): T | undefined {
    return this.#rows[this.#at]
  }

  advance(): void {
    this.#at++
  }

  /** The batch in hand is used up and the cursor may have more: `await fill()` before `head()`. */
  get needsFetch(): boolean {
    return this.#at >= this.#rows.length && !this.#ended
  }

  /** Takes the batch requested earlier and requests the one after it (a short batch is the last). */
  async fill(): Promise<void> {
    const rows = await this.#next!
    this.#gauge.add(-(this.#rows.length))
    this.#rows = rows
    this.#at = 0
    if (this.#nextSize < this.#batch) {
      this.#ended = true
      this.#next = null
    } else {
      this.#request()
    }
  }

  async close(): Promise<void> {
    if (this.#next) await this.#next.catch(() => [])
    this.#gauge.add(-(this.#rows.length + (this.#next ? this.#nextSize : 0)))
    this.#rows = []
    this.#next = null
    this.#ended = true
    await sql`close ${sql.ref(this.#name)}`.execute(this.#trx)
  }
}

/** The rows of a query one at a time, through a {@link ServerCursor} (memory: two batches). */
export async function* cursorRows<T>(trx: Trx, name: string, query: RawBuilder<unknown>, batch = 5_000): AsyncGenerator<T> {
  const cursor = await ServerCursor.open<T>(trx, name, query, batch, new BufferGauge())
  try {
    for (;;) {
      if (cursor.needsFetch) await cursor.fill()
      const row = cursor.head()
      if (row === undefined) return
      yield row
      cursor.advance()
    }
  } finally {
    await cursor.close()
  }
}
